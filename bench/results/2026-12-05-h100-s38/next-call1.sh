#!/usr/bin/env bash
# Prepared in session 38 for the next GPU session's first call (about 4 min, any GPU; carry
# .carry/): whether a memory-bound call's speed follows its output's place (bench/placement_gpu.py,
# the two states of identical calls), then the timing hardening check on the candidates' 3 ms
# warm-up, the default since session 38 (call 3 of session 38 ran the 10 ms one). Writes
# $OUT/placement.txt, $OUT/placement.json and $OUT/hardening.tgz (the script's folder), and prints
# the hardening table.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 bench/placement_gpu.py --out $OUT/placement.json 2>&1 | tee $OUT/placement.txt
OUT=/tmp/th bash bench/timing_hardening_gpu.sh 2>&1 | tail -34
tar czf $OUT/hardening.tgz -C /tmp/th .
