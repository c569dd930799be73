#!/usr/bin/env bash
# Session 42, for an H200 if one comes (issue 14's first acceptance point, about 9 min, timeout_s
# 560, carry .carry/): the 184 references as their own candidates at the defaults, cold (the eager
# baselines timed in the run), then warm (the eager cache of the cold run), then
# bench/two_states.py on both databases; then the attack skip_rows at full size.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -f /var/tmp/kbx-eager-s30.db
NAME=cold RUN_TIMEOUT=${COLD_TIMEOUT:-280} VARIANTS=base \
  bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 | grep -v '^  idle\|^  gaps' | tail -8
NAME=warm RUN_TIMEOUT=${WARM_TIMEOUT:-200} VARIANTS=base \
  bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 | grep -v '^  idle\|^  gaps' | tail -8
gunzip -c $OUT/eager.db.gz > /tmp/cold.db 2>/dev/null && python3 bench/two_states.py /tmp/cold.db | tee $OUT/two-states.txt
[ -s $OUT/warm.db.gz ] && gunzip -c $OUT/warm.db.gz > /tmp/warm.db && python3 bench/two_states.py /tmp/warm.db | tee -a $OUT/two-states.txt
OUT=/tmp/va ONLY=skip_rows timeout 60 bash bench/verdict_accuracy_gpu.sh 2>&1 | tail -3 | tee $OUT/skip-rows.txt
