#!/usr/bin/env bash
# Session 31, call 1 (about 9 min): does the settle's burst (160 scrubs behind a 1 ms hold) see a
# neighbour and stay quiet alone (neighbour_gpu.py, now with 0.7 and 1.1 ms calls)? Then the 184
# references as candidates, cold (the worker hash changed: eager baselines timed in the run, each
# settled; candidates settle too), keeping the eager database in /var/tmp for the later calls.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
timeout 120 python3 bench/neighbour_gpu.py 2>&1 | tee $OUT/neighbour.txt | grep -v "^neighbour:\|^queued\|^running" | cut -c1-260
RUN_TIMEOUT=380 VARIANTS=base OUT=$OUT bash bench/results/2026-12-05-h200-s30/refs184.sh 2>&1 | tail -62
ls -la /var/tmp/kbx-eager-s30.db 2>&1
