#!/usr/bin/env bash
# Prepared in session 27 for the next GPU session: the compile workload (every task's
# torch.compile candidate, cold caches) at the defaults with KBX_SLOT_AT=launch, 400 s, slot
# traced and job timelines logged; session 26's next-call1.sh is the same run with the slot
# taken before the call (the A/B: run it as call 3). Session 25 call 3's database gives every
# task's eager timing (the reference worker's sources are unchanged since: candidate_mode.py
# is left out of sched::worker_sources_hash). Session 24: 116 judged in 470 s, 4.05 s each.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/cold.db
export KBX_DEBUG_TIMING=1 KBX_SLOT_TRACE=$OUT/compile-slot-trace.txt KBX_SLOT_AT=launch
OUT=$OUT RUNS=full TIMEOUT=${TIMEOUT:-400} SEED=7 FROM_DB=/tmp/cold.db bash bench/compile_workload_gpu.sh 2>&1 | tail -40
python3 bench/slot_profile.py $OUT/compile_workload/full.log --top 15 --trace $OUT/compile-slot-trace.txt > $OUT/compile-slot-profile.txt 2>&1
head -45 $OUT/compile-slot-profile.txt
cd $OUT && gzip -f compile_workload/*.log compile-slot-trace.txt; rm -rf compile_workload/cands compile_workload/*.db*
