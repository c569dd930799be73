#!/usr/bin/env bash
# Issue 14 on the GPU, in one call: the pipeline (--jobs lanes, one timing slot per GPU).
#   1. every task's reference as its own candidate (--track any), timed, default --jobs: the
#      wall time of the whole suite (target: at most 3 minutes on one H200);
#   2. the 12 issue-20 experts twice with the default --jobs (the pipeline on): repeatability
#      of speedups between the two (bench/compare_runs.py; targets: median <= 1%, max <= 5%);
#   3. the same experts with --jobs 1: wall time beside step 2's.
#   refs_again (a step of its own): step 1 once more with the same seed, its references then
#   taken from the reference cache (set SEED, e.g. SEED=7 STEPS="refs refs_again").
# Expects the kbx binary and probe library carried in .carry/ (bench/README.md), else build/.
#   OUT=/dir [STEPS="refs pipeline serial"] bash bench/throughput_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/throughput
STEPS=${STEPS:-refs pipeline serial}
TASKS=${TASKS:-Activation/gelu,Math/add,Math/softmax,Reduce/sum,Reduce/argmax,MatrixMultiply/matmul,Normalization/batch_norm,Loss/mse_loss,Index/index_select,Fusion/fused_add_gelu,Optimizer/AdamW,Quantization/matmul_w8a8}
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-work-throughput}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
timed() {  # timed NAME SECONDS cmd...: runs it, prints and records its wall time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s.%N)
  timeout --signal=INT "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$? t1=$(date +%s.%N)
  local wall=$(python3 -c "print(f'{$t1-$t0:.1f}')")
  echo "$name wall_s=$wall exit=$rc" | tee -a "$OUT/walls.txt"
  grep "^eval" "$OUT/$name.log" | grep -v " passed " | head -20
}

for step in $STEPS; do
  case $step in
    refs|refs_again)
      log "every task's reference as its candidate (--track any), timed ($step)"
      rm -rf "$OUT/refcands"
      for ref in tasks/*/*/reference.py; do
        task=${ref#tasks/}; task=${task%/reference.py}
        mkdir -p "$OUT/refcands/$(dirname "$task")"
        cp "$ref" "$OUT/refcands/$task.py"
      done
      timed "$step" "${REFS_TIMEOUT:-420}" "$KBX" eval --method refs --candidates "$OUT/refcands" \
        --track any --device cuda --db "$OUT/$step.db" --fresh ${SEED:+--seed "$SEED"}
      "$KBX" results --db "$OUT/$step.db" --format csv > "$OUT/$step.csv" 2>/dev/null
      echo "$step passed: $(grep -c ',passed,' "$OUT/$step.csv") of $(($(wc -l < "$OUT/$step.csv") - 1))"
      echo "$step references from the cache: $(grep -c 'from the cache' "$OUT/$step.log")"
      ;;
    pipeline)
      for k in 1 2; do
        log "experts, default --jobs (run $k)"
        timed "pipeline$k" "${RUN_TIMEOUT:-300}" "$KBX" eval --method expert \
          --candidates solutions/expert --tasks "$TASKS" --device cuda --db "$OUT/pipeline$k.db" --fresh
      done
      python3 bench/compare_runs.py "$OUT/pipeline1.db" "$OUT/pipeline2.db" | tail -n 4 \
        | tee "$OUT/repeatability.txt"
      ;;
    serial)
      log "experts, --jobs 1"
      timed serial "${RUN_TIMEOUT:-300}" "$KBX" eval --method expert --candidates solutions/expert \
        --tasks "$TASKS" --device cuda --jobs 1 --db "$OUT/serial.db" --fresh
      python3 bench/compare_runs.py "$OUT/serial.db" "$OUT/pipeline1.db" | tail -n 4
      ;;
  esac
done
log "done"
