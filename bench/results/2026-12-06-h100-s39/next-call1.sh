#!/usr/bin/env bash
# Prepared in session 39 for the next GPU session's first call (about 8 min, any GPU; give the
# call timeout_s 600 and carry .carry/): the two states of identical calls (session 38), whose
# slow state belongs to one case's freshly made buffers (one case of a task slow, its neighbours
# in the same hold not):
#   1. bench/pressure_gpu.py: fresh buffers on an idle GPU against a GPU whose memory other
#      processes fill (90%, 95%, and 90% in fragments below 2 MiB) in fragments; which buffers (inputs or output) carry a slow round;
#   2. clocks-cold.sh: the 184 references cold with the GPU's clocks sampled beside them, then
#      bench/two_states.py and bench/clocks_at_holds.py (were the slow eager timings at low clocks?).
# Writes $OUT/pressure.txt, $OUT/pressure.json, $OUT/clocks-cold.tgz (clocks-cold.sh's files),
# $OUT/clocks-at-holds.txt and $OUT/cold.txt.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 180 python3 bench/pressure_gpu.py --out $OUT/pressure.json 2>&1 | tee $OUT/pressure.txt
mkdir -p /tmp/cc
OUT=/tmp/cc RUN_TIMEOUT=${RUN_TIMEOUT:-320} bash bench/results/2026-12-06-h100-s39/clocks-cold.sh 2>&1 |
  tail -60
cp /tmp/cc/clocks-at-holds.txt /tmp/cc/cold.txt $OUT/ 2>/dev/null
tar czf $OUT/clocks-cold.tgz -C /tmp/cc .
