#!/usr/bin/env bash
# Session 40, one device call (about 9 min; timeout_s 590, carry .carry/): session 39's
# bench/pressure_gpu.py found the slow state of identical calls on an idle GPU too, in the rounds
# timed as kbx's timer does (one output block every call), and in none of those timed with the
# last three outputs kept alive (four output blocks, the median over them). So:
#   1. the 184 references cold with KBX_TIMER_KEEP_OUTPUTS=3 (both timers), then
#      bench/two_states.py on its database: cases over 8% apart (cold base runs: 7, 12 and 8,
#      the eager side slower in nearly all);
#   2. bench/timing_hardening_gpu.sh with the same setting (every attack its status, the experts
#      within their roofline).
# Writes $OUT/cold.txt, $OUT/cold.tgz, $OUT/eager.db.gz (call.sh), $OUT/two-states.txt,
# $OUT/hardening.tgz and $OUT/hardening.txt.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
NAME=cold RUN_TIMEOUT=${RUN_TIMEOUT:-320} VARIANTS=keep3 bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
  grep -v '^  idle\|^  gaps' | tail -12
gunzip -c $OUT/eager.db.gz > /tmp/cold.db && python3 bench/two_states.py /tmp/cold.db | tee $OUT/two-states.txt
[ "${HARDENING:-1}" = 1 ] || exit 0  # HARDENING=0: the cold run only (about 5 min)
KBX_TIMER_KEEP_OUTPUTS=3 OUT=/tmp/hard bash bench/timing_hardening_gpu.sh > $OUT/hardening.txt 2>&1
tail -40 $OUT/hardening.txt
tar czf $OUT/hardening.tgz -C /tmp/hard .
