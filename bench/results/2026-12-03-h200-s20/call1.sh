#!/usr/bin/env bash
# session 20, call 1: the 184 references as candidates, cold (the worker changed: nothing
# cached), JOBS=12 REF_WORKERS=8 LIVE_TASKS=20 as session 19's call 1 (340.8 s). New since: the
# references keep no inputs file for a full-size case that they leave unchanged and whose
# generator rebuilds it (lean_inputs), the room gate counting a task's files as written at
# files_written, the timer asking for the quiet host before its warm-up.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} LIVE_TASKS=${LIVE_TASKS:-20}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
RUN=cold RUN_TIMEOUT=${RUN_TIMEOUT:-380} bash bench/results/2026-12-03-h200-s17/run184.sh
grep -c "oom\|out of memory" $OUT/cold.db 2>/dev/null | sed 's/^/oom mentions in db: /'
python3 - $OUT/cold.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
import json
print("reference footprints (GB, sum over tasks):",
      round(sum(json.loads(r[0])[0] for r in c.execute("select samples from baselines where kind like 'reference_bytes%'")) / 1e9, 1))
PY
