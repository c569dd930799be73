#!/usr/bin/env bash
# Issue 12 on the GPU: two `kbx eval` of the same method and candidates into two databases at
# once (each with its own scratch folder), then the same alone; the verdicts must agree.
#   OUT=/dir [TASKS=...] bash bench/concurrent_runs_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/concurrent
TASKS=${TASKS:-Math/add,Activation/gelu,Reduce/sum,Loss/mse_loss}
mkdir -p "$OUT"
run() { "$KBX" eval --method expert --candidates solutions/expert --device cuda --no-time \
  --tasks "$TASKS" --db "$OUT/$1.db" > "$OUT/$1.log" 2>&1; echo "$1: exit $?"; }
run a & run b & wait
run alone
for d in a b alone; do
  "$KBX" results --db "$OUT/$d.db" --format csv | cut -d, -f3,5,6,7 | sort > "$OUT/$d.verdicts"
done
cat "$OUT/alone.verdicts"
if cmp -s "$OUT/a.verdicts" "$OUT/alone.verdicts" && cmp -s "$OUT/b.verdicts" "$OUT/alone.verdicts"; then
  echo "concurrent runs: same verdicts as alone"
else
  echo "concurrent runs: DIFFERENT"; diff "$OUT/a.verdicts" "$OUT/alone.verdicts"; diff "$OUT/b.verdicts" "$OUT/alone.verdicts"; exit 1
fi
