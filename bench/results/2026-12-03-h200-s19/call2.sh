#!/usr/bin/env bash
# session 19, call 2: the 184 references as candidates with call 1's database (eager timings
# cached), same settings (session 18's warm run: 237 s); then repeatability of the experts of
# half the categories (A: Math Fusion MatrixMultiply Quantization, 41 experts), two runs.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} LIVE_TASKS=${LIVE_TASKS:-20}
df -h /dev/shm / | tail -n 2; free -g | head -2
RUN=warm FROM_DB=$PWD/.carry/cold.db RUN_TIMEOUT=${RUN_TIMEOUT:-270} bash bench/results/2026-12-03-h200-s17/run184.sh
O=$OUT; export OUT=$O/repA
mkdir -p $OUT && CATS="Math Fusion MatrixMultiply Quantization" REP_TIMEOUT=${REP_TIMEOUT:-140} bash bench/repeatability_gpu.sh
