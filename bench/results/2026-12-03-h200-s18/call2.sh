#!/usr/bin/env bash
# session 18, call 2: the 184 references as candidates, cold (the worker changed in session 17:
# compact shadows, the pool made at start; nothing cached), JOBS=12 REF_WORKERS=8 LIVE_TASKS=20
# as session 17's warm run. Against session 17's cold 333 s (defaults) and warm 241 s.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
S=bench/results/2026-12-03-h200-s17
RUN=cold RUN_TIMEOUT=${RUN_TIMEOUT:-500} bash $S/run184.sh
