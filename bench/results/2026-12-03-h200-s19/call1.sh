#!/usr/bin/env bash
# session 19, call 1: the 184 references as candidates, cold (the worker changed: nothing cached),
# JOBS=12 REF_WORKERS=8 LIVE_TASKS=20 as session 18's call 2 (314.7 s). New since: the full-size
# inputs, their twins' and the decoys built before the slot (prefetch), the hush costs traced.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} LIVE_TASKS=${LIVE_TASKS:-20}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
RUN=cold RUN_TIMEOUT=${RUN_TIMEOUT:-360} bash bench/results/2026-12-03-h200-s17/run184.sh
grep -c "oom\|out of memory" $OUT/cold.db 2>/dev/null | sed 's/^/oom mentions in db: /'
