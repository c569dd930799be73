#!/usr/bin/env bash
# session 17, call 2: the 184 references as candidates with call 1's database (every task's eager
# timings and footprint), JOBS/REF_WORKERS/LIVE_TASKS as given; then the three supervisor
# attacks of session 16 on cuda (each with an honest expert beside it).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
S=bench/results/2026-12-03-h200-s17
RUN=warm RUN_TIMEOUT=${RUN_TIMEOUT:-300} bash $S/run184.sh
echo "== $(date -u +%T) supervisor attacks on cuda"
python3 $S/attacks.py "$OUT/attacks" 2>&1 | tail -n 20
echo "== $(date -u +%T) done"
