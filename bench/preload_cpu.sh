#!/usr/bin/env bash
# The warm parent's torch.compile preload (session 31) on the CPU: six torch.compile candidates
# (eager backend: Dynamo's capture without Inductor's C++ compiles) judged by `kbx eval --device
# cpu` with KBX_PRELOAD_COMPILER=0 and =1, twice each; prints each run's wall time and its jobs'
# steps (bench/job_timelines.py: static->imported is the candidate's import). About a minute on
# two cores.
#   [KBX_PYTHON=python-with-torch] [OUT=dir] bash bench/preload_cpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/build/kbx}
PY=${KBX_PYTHON:-python3}
OUT=${OUT:-/tmp/kbx-preload-cpu}
TASKS=Activation/relu,Math/add,Reduce/sum,Activation/gelu,Activation/sigmoid,Loss/mse_loss
rm -rf "$OUT" && mkdir -p "$OUT"
"$PY" bench/make_compile_candidates.py --tasks tasks --out "$OUT/cands" --backend eager \
  --only "$TASKS" || exit 1
for round in 1 2; do
  for preload in 0 1; do
    log=$OUT/preload$preload-$round.log
    t0=$(date +%s.%N)
    KBX_PYTHON=$PY KBX_PRELOAD_COMPILER=$preload KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off \
      KBX_WORK=$OUT/work "$KBX" eval --method compile --candidates "$OUT/cands" --track any \
      --device cpu --db "$OUT/preload$preload-$round.db" --fresh > "$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    passed=$("$KBX" results --db "$OUT/preload$preload-$round.db" --format csv | grep -c ",passed,")
    printf "KBX_PRELOAD_COMPILER=%s run %s: exit %s, wall %.2f s, %s passed\n" "$preload" "$round" \
      "$rc" "$(python3 -c "print($t1 - $t0)")" "$passed"
    python3 bench/job_timelines.py "$log" | grep -E "static->imported|  worker "
  done
done
