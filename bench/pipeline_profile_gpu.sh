#!/usr/bin/env bash
# Where a task's time goes in the pipeline (issue 14): the references of TASKS as their own
# candidates (--track any), timed, with KBX_DEBUG_TIMING (each reference case's steps, each
# candidate's timeline), a reference cache of its own, then the size of each cache entry.
#   OUT=/dir [TASKS=...] [REF_WORKERS=1] [REF_CHUNK=N] [JOBS=N] [LIVE_TASKS=N] [DB=file] [KEEP_REF_CACHE=1]
#     [REF_CACHE_MB=n] [FINISHING_JOBS=n] bash bench/pipeline_profile_gpu.sh
# DB: the results database (default $OUT/profile.db); a second run into the same one finds this
# machine's eager timings cached. The reference cache ($KBX_REF_CACHE) starts empty unless
# KEEP_REF_CACHE=1: then a run after one with the same cache finds every reference computed.
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/profile
TASKS=${TASKS:-$(ls -d tasks/Activation/* | sed 's|tasks/||' | paste -sd,)}
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-work-profile}
export KBX_REF_CACHE=${KBX_REF_CACHE:-/dev/shm/kbx-ref-cache-profile}
export PYTHONUNBUFFERED=1 KBX_DEBUG_TIMING=1
mkdir -p "$OUT/refcands"
[ "${KEEP_REF_CACHE:-0}" = 1 ] || rm -rf "$KBX_REF_CACHE"
for task in ${TASKS//,/ }; do
  mkdir -p "$OUT/refcands/$(dirname "$task")"
  cp "tasks/$task/reference.py" "$OUT/refcands/$task.py"
done
t0=$(date +%s.%N)
timeout --signal=INT "${PROFILE_TIMEOUT:-300}" "$KBX" eval --method refs --candidates "$OUT/refcands" \
  --track any --device cuda --db "${DB:-$OUT/profile.db}" --fresh --seed 7 \
  ${REF_WORKERS:+--reference-workers "$REF_WORKERS"} ${REF_CHUNK:+--reference-chunk "$REF_CHUNK"} ${JOBS:+--jobs "$JOBS"} ${LIVE_TASKS:+--live-tasks "$LIVE_TASKS"} \
  ${REF_CACHE_MB:+--ref-cache-mb "$REF_CACHE_MB"} ${FINISHING_JOBS:+--finishing-jobs "$FINISHING_JOBS"} \
  > "$OUT/profile.log" 2>&1
echo "profile wall_s=$(python3 -c "import time; print(f'{time.time()-$t0:.1f}')") exit=$?"
grep -c " passed " "$OUT/profile.log" | sed 's/^/passed: /'
du -sm "$KBX_REF_CACHE"/* 2>/dev/null | sort -n | tail -n 5 | sed 's/^/cache entry MB: /'
du -sm "$KBX_REF_CACHE" 2>/dev/null | sed 's/^/cache total MB: /'
