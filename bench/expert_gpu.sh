#!/usr/bin/env bash
# Issue 18 on the GPU: the expert kernels of some categories with the eager and torch.compile
# baselines, a calibration for roofline fractions, and docs/expert.md's tables from them.
# torch.compile of each reference is compiled outside the GPU's timing slot, on the host's
# cores, so the 84 tasks of part I take about 7 minutes on the H200 in one call
# (EVAL_ARGS="--reference-workers 6" gives the compiles more workers):
#   OUT=/dir [CATEGORIES=Activation,Reduce,Loss] [TASKS=Math/add,...] bash bench/expert_gpu.sh
# BASELINES=eager skips torch.compile; START_DB=file goes on from an earlier call's database
# (with SKIP_CALIBRATE=1 its calibration is used, and its compile baselines are not timed again).
# Expects the kbx binary and probe library carried in .carry/ (bench/README.md), else build/.
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/expert
CATEGORIES=${CATEGORIES:-Activation,Math,Reduce,Loss,Index,Normalization,Optimizer,Random}
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-work-expert}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
DB=$OUT/expert.db
# START_DB: a database to go on from (its calibration and cached torch.compile baselines are kept).
if [ -n "${START_DB:-}" ]; then cp "$START_DB" "$DB"; fi
BASELINES=${BASELINES:-eager,compile}
log() { echo "== $(date -u +%H:%M:%S) $*"; }

if [ "${SKIP_CALIBRATE:-0}" != 1 ]; then
  log "calibrate"
  timeout --signal=KILL "${CALIBRATE_TIMEOUT:-150}" "$KBX" calibrate --db "$DB" > "$OUT/calibrate.txt" 2>&1
  tail -n 8 "$OUT/calibrate.txt"
fi
# One eval for all the categories (the pipeline keeps the GPU busy across them); the tasks are
# those with an expert file. EVAL_ARGS: more options for it (say --reference-workers 6).
IFS=, read -ra cats <<< "$CATEGORIES"
# TASKS=Category/name,...: only these (their categories' tables then cover just them).
tasks=${TASKS:-$(for cat in "${cats[@]}"; do
  for f in solutions/expert/"$cat"/*.py; do echo "$cat/$(basename "$f" .py)"; done
done | paste -sd, -)}
log "experts of $CATEGORIES ($(echo "$tasks" | tr , '\n' | wc -l) tasks), baselines $BASELINES"
# shellcheck disable=SC2086  # EVAL_ARGS is a list of options
timeout --signal=KILL "${RUN_TIMEOUT:-900}" "$KBX" eval --method expert --candidates solutions/expert \
  --device cuda --tasks "$tasks" --baselines "$BASELINES" --db "$DB" ${EVAL_ARGS:-} \
  > "$OUT/eval.log" 2>&1
echo "   (exit $?)"
grep "^eval" "$OUT/eval.log" | grep -v " passed " || true
"$KBX" results --db "$DB" --format json > "$OUT/results.json" 2>/dev/null
"$KBX" results --db "$DB" > "$OUT/results.txt" 2>/dev/null
python3 bench/expert_report.py "$OUT/results.json" --categories "$CATEGORIES" > "$OUT/expert.md"
rc=$?
cat "$OUT/expert.md"
log "done (report exit $rc)"
exit "$rc"
