#!/usr/bin/env bash
# session 18, call 3: the 184 references as candidates with call 2's database (eager timings and
# footprints cached), JOBS=12 REF_WORKERS=8 LIVE_TASKS=20 (session 17's warm run: 241 s).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
S=bench/results/2026-12-03-h200-s17
RUN=warm FROM_DB=$PWD/.carry/cold.db RUN_TIMEOUT=${RUN_TIMEOUT:-400} bash $S/run184.sh
