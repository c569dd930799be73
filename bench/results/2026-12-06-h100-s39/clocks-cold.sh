#!/usr/bin/env bash
# Session 39: the 184 references cold (session 37's call.sh), with the GPU's clocks, power,
# temperature and utilisation sampled every 50 ms beside it (nvidia-smi), and one pair of
# wall-clock and monotonic times to place the slot trace's (monotonic) grants on that record:
# whether the eager timings drawn slow (bench/two_states.py) ran at lower clocks. Writes
# $OUT/clocks.csv, $OUT/reasons.csv, $OUT/clockpair.txt beside call.sh's files.
export PATH=/opt/torch/.venv/bin:$PATH
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,utilization.memory \
  --format=csv,noheader,nounits -lms 50 > $OUT/clocks.csv 2>&1 &
A=$!
nvidia-smi --query-gpu=timestamp,clocks_event_reasons.active --format=csv,noheader -lms 100 > $OUT/reasons.csv 2>&1 &
B=$!
python3 -c "import time; print(time.time(), time.monotonic())" > $OUT/clockpair.txt
NAME=cold RUN_TIMEOUT=${RUN_TIMEOUT:-330} VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh |
  grep -v '^  idle\|^  gaps' | tail -30
python3 -c "import time; print(time.time(), time.monotonic())" >> $OUT/clockpair.txt
kill $A $B
gunzip -c $OUT/eager.db.gz > /tmp/cold.db && python3 bench/two_states.py /tmp/cold.db
python3 bench/clocks_at_holds.py --trace /tmp/tl/warm/slot-trace.txt.gz --clocks $OUT/clocks.csv \
  --pair $OUT/clockpair.txt --db /tmp/cold.db > $OUT/clocks-at-holds.txt 2>&1
head -30 $OUT/clocks-at-holds.txt; tail -4 $OUT/clocks-at-holds.txt; head -3 $OUT/reasons.csv
gzip -f $OUT/clocks.csv $OUT/reasons.csv
