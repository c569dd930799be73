#!/usr/bin/env bash
# Prepared in session 31 for the next GPU session (about 5 min): the compile workload (every
# task's torch.compile candidate, cold caches) at the defaults, with the candidates' warm parent
# importing Dynamo and Inductor once (session 31), against session 30's call b (77 judged in the
# first 270 s, 3.51 s per kernel; a job's cuda_started->imported median 7.07 s).
# The eager timings must come from a database of the current reference worker (its sources
# changed in sessions 30 and 31, so session 25's no longer applies): run refs184.sh first on the
# same machine, which keeps one in /var/tmp/kbx-eager-s30.db. Without it the run times the eager
# baselines itself and its per-kernel figure is not comparable (said below).
#   OUT=/dir [TIMEOUT=270] [JOBS=n] [PRELOAD=1] bash bench/results/2026-12-05-cpu-s31/compile.sh
# (the preload is off by default since it started CUDA in the warm parent on the H100: PRELOAD=1
# tries it again, once its check is fixed)
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
EAGER_DB=${EAGER_DB:-/var/tmp/kbx-eager-s30.db}
if [ -s "$EAGER_DB" ]; then
  cp "$EAGER_DB" /tmp/compile-eager.db; FROM=(FROM_DB=/tmp/compile-eager.db)
else
  echo "compile.sh: no eager database at $EAGER_DB: the eager baselines are timed in this run (not comparable)"
  FROM=()
fi
if [ "${PRELOAD:-0}" = 1 ]; then export KBX_PRELOAD_COMPILER=1; fi
export KBX_DEBUG_TIMING=1 KBX_SLOT_TRACE=$OUT/compile-slot-trace.txt
env "${FROM[@]}" OUT=$OUT RUNS=full TIMEOUT=${TIMEOUT:-270} SEED=7 ${JOBS:+JOBS=$JOBS} ${REF_WORKERS:+REF_WORKERS=$REF_WORKERS} \
  bash bench/compile_workload_gpu.sh 2>&1 | tail -30
grep -c "starts again without them" $OUT/compile_workload/full.log | sed 's/^/warm parent restarts without the preload: /'
python3 bench/job_timelines.py $OUT/compile_workload/full.log > $OUT/job-timelines.txt 2>&1
head -16 $OUT/job-timelines.txt
python3 bench/slot_profile.py $OUT/compile_workload/full.log --top 15 --trace $OUT/compile-slot-trace.txt > $OUT/compile-slot-profile.txt 2>&1
head -12 $OUT/compile-slot-profile.txt
cd $OUT && gzip -f compile_workload/*.log compile-slot-trace.txt; rm -rf compile_workload/cands compile_workload/*.db*
