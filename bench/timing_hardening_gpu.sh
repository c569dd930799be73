#!/usr/bin/env bash
# Issue 20 on the GPU, in one call (about 4-6 minutes on the H200):
#   1. kbx calibrate (about 1 min) into one database: the physical floor needs it;
#   2. the expert kernels (12 tasks, or $TASKS) into the same database: all must pass, none above
#      105% of its roofline, overhead median <= 1.5 s;
#   3. each attack of tests/adversarial/timing/<attack>/ (its own method), and the planted
#      exploits of tests/fixtures/timing-exploits/;
#   4. bench/timing_hardening_check.py prints one table (status got vs expected) and exits
#      non-zero on any mismatch.
# Expects the kbx binary and probe library carried in .carry/ (bench/README.md), else build/.
#   OUT=/dir bash bench/timing_hardening_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/timing-hardening
TASKS=${TASKS:-Activation/gelu,Math/add,Math/softmax,Reduce/sum,Reduce/argmax,MatrixMultiply/matmul,Normalization/batch_norm,Loss/mse_loss,Index/index_select,Fusion/fused_add_gelu,Optimizer/AdamW,Quantization/matmul_w8a8}
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-work-hardening}
export PYTHONUNBUFFERED=1
rm -rf "$OUT"; mkdir -p "$OUT"
DB=$OUT/hardening.db
log() { echo "== $(date -u +%H:%M:%S) $*"; }
step() { local t=$1; shift; timeout --signal=KILL "$t" "$@"; local rc=$?; echo "   (exit $rc)"; return $rc; }

log "calibrate"
step ${CALIBRATE_TIMEOUT:-150} "$KBX" calibrate --db "$DB" > "$OUT/calibrate.txt" 2>&1
tail -n 8 "$OUT/calibrate.txt"

log "experts ($TASKS)"
step ${RUN_TIMEOUT:-300} "$KBX" eval --method expert --candidates solutions/expert --device cuda \
  --tasks "$TASKS" --db "$DB" --fresh > "$OUT/eval-expert.log" 2>&1

for dir in tests/adversarial/timing/*/; do
  attack=$(basename "$dir")
  log "attack $attack"
  step ${ATTACK_TIMEOUT:-150} "$KBX" eval --method "$attack" --candidates "$dir" --device cuda \
    --db "$DB" --fresh > "$OUT/eval-$attack.log" 2>&1
done

log "planted exploits"
step ${EXPLOIT_TIMEOUT:-240} "$KBX" eval --method exploits --candidates tests/fixtures/timing-exploits \
  --device cuda --db "$DB" --fresh > "$OUT/eval-exploits.log" 2>&1

"$KBX" results --db "$DB" --format csv > "$OUT/results.csv" 2>/dev/null
"$KBX" results --db "$DB" --format json > "$OUT/results.json" 2>/dev/null
"$KBX" results --db "$DB" > "$OUT/results.txt" 2>/dev/null
log "check"
python3 bench/timing_hardening_check.py "$OUT/results.csv" "$OUT/results.json" | tee "$OUT/check.txt"
rc=${PIPESTATUS[0]}
log "done (exit $rc)"
exit "$rc"
