#!/usr/bin/env bash
# session 24, call 3 (as run): the compile workload over every task, --jobs 12, 470 s, with call
# 2's database (eager timings cached, seed 7); the references computed in the run.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
OUT=$OUT RUNS=full TIMEOUT=470 SEED=7 FROM_DB=/tmp/cold.db JOBS=12 bash bench/compile_workload_gpu.sh 2>&1 | tail -40
cd $OUT && gzip -f compile_workload/*.log; rm -rf compile_workload/cands
