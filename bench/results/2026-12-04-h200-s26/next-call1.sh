#!/usr/bin/env bash
# Prepared in session 26 for the next GPU session (not yet run): the compile workload over every
# task at the defaults (12 lanes, 8 reference workers, no finishing jobs), 540 s, with session
# 25 call 3's database (every task's eager timings cached: the worker's Python is unchanged
# since, so they still match), seed 7; the references are computed in the run. Session 24:
# 116 judged in 470 s at --jobs 12, 4.05 s per kernel (target 3), job wall median 34.7 s.
# With the slot traced and each job's timeline logged: a torch.compile candidate recompiles
# for the full-size shapes in its first full-size judged call, which runs holding the GPU's
# slot (for autotuners): is the slot the bottleneck here (busy ~100%, long holds before the
# first timed loop), or the CPU (slot idle, jobs slow to reach slot_wanted)?
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/cold.db
export KBX_DEBUG_TIMING=1 KBX_SLOT_TRACE=$OUT/compile-slot-trace.txt
OUT=$OUT RUNS=full TIMEOUT=${TIMEOUT:-540} SEED=7 FROM_DB=/tmp/cold.db bash bench/compile_workload_gpu.sh 2>&1 | tail -40
python3 bench/slot_profile.py $OUT/compile_workload/full.log --top 15 --trace $OUT/compile-slot-trace.txt > $OUT/compile-slot-profile.txt 2>&1
head -45 $OUT/compile-slot-profile.txt
cd $OUT && gzip -f compile_workload/*.log compile-slot-trace.txt; rm -rf compile_workload/cands compile_workload/*.db*
