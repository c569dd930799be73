#!/usr/bin/env bash
# Session 35, call 1 (about 7.5 min): the machine, the timer's host-wait check before and after
# its fix, the host's speed per CPU, then the 184 references cold (eager timings timed in the run,
# kept in /var/tmp for call 2).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
nproc
mkdir -p $OUT/sync $OUT/host
python3 bench/sync_detect_cost.py --out $OUT/sync/sync_detect.json 2>&1 | tee $OUT/sync/out.txt
python3 bench/host_speed.py --out $OUT/host/host_speed.json > $OUT/host/out.txt 2>&1
tail -25 $OUT/host/out.txt
RUN_TIMEOUT=330 VARIANTS=base OUT=$OUT/cold bash bench/results/2026-12-05-h200-s30/refs184.sh
