#!/usr/bin/env bash
# One whole check on a GPU machine, in one call. Expects the kbx binary and the probe library
# built elsewhere and carried in .carry/ (bench/README.md says how). Writes logs and databases
# under $OUT (or ./gpu-out).
#   [STEPS="doctor tensorio run1 run2 calibrate compile noprobe zeros exploits check probe"] bench/gpu_session.sh [TASKS]
# SESSION_DIR, KBX_WORK and ARCHIVE let two copies run side by side (one per GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/gpu-out}
OUT=${SESSION_DIR:-/tmp/kbx-session}  # logs gather here; one archive goes to $FINAL at the end
ARCHIVE=${ARCHIVE:-session.tgz}
STEPS=" ${STEPS:-doctor tensorio run1 run2 noprobe zeros exploits check probe} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
KBX=$PWD/.carry/bin/kbx
TASKS=${1:-Activation/gelu,Math/add,Math/softmax,Reduce/sum,Reduce/argmax,MatrixMultiply/matmul,Normalization/batch_norm,Loss/mse_loss,Index/index_select,Fusion/fused_add_gelu,Optimizer/AdamW,Quantization/matmul_w8a8}
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-work}
export PYTHONUNBUFFERED=1
log() { echo "== $(date -u +%H:%M:%S) $*"; }

if want doctor; then
log doctor
"$KBX" doctor 2>&1 | tee "$OUT/doctor.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/doctor.txt"
fi

step() { local t=$1; shift; timeout --signal=KILL "$t" "$@"; local rc=$?; echo "   (exit $rc)"; return $rc; }

if want tensorio; then
log "tensor files: pinned-staged round trips"
if ! step 60 python3 bench/check_tensorio.py --dir "${KBX_WORK%/*}" > "$OUT/tensorio.txt" 2>&1; then
  export KBX_TENSOR_STAGING=0; echo "   staging off (KBX_TENSOR_STAGING=0)" | tee -a "$OUT/tensorio.txt"
fi
cat "$OUT/tensorio.txt" | tail -n 6
fi

if want run1; then
log "expert eval, run 1"
step ${RUN_TIMEOUT:-200} "$KBX" eval --method expert --candidates solutions/expert --device cuda --tasks "$TASKS" \
  --db "$OUT/expert.db" --fresh > "$OUT/eval-expert-1.log" 2>&1
tail -n 2 "$OUT/eval-expert-1.log"
"$KBX" results --db "$OUT/expert.db" --method expert | tee "$OUT/expert-run1.txt"
fi

if want zeros; then
log "zero candidates"
python3 bench/make_zero_candidates.py "$OUT/zeros" --tasks "$TASKS" >/dev/null
step ${ZERO_TIMEOUT:-120} "$KBX" eval --method zeros --candidates "$OUT/zeros" --device cuda --tasks "$TASKS" --no-time \
  --db "$OUT/zeros.db" > "$OUT/eval-zeros.log" 2>&1
"$KBX" results --db "$OUT/zeros.db" --format csv | cut -d, -f3,5 | tee "$OUT/zeros.csv"
rm -rf "$OUT/zeros"
fi

if want run2; then
log "expert eval, run 2"
step ${RUN_TIMEOUT:-200} "$KBX" eval --method expert --candidates solutions/expert --device cuda --tasks "$TASKS" \
  --db "$OUT/expert2.db" --fresh > "$OUT/eval-expert-2.log" 2>&1
"$KBX" results --db "$OUT/expert2.db" --method expert | tee "$OUT/expert-run2.txt"
fi

if want calibrate && [ -f "$OUT/expert.db" ]; then
log "calibrate (peaks for roofline fractions), into expert.db"
step ${CALIBRATE_TIMEOUT:-90} "$KBX" calibrate --db "$OUT/expert.db" > "$OUT/calibrate.txt" 2>&1
tail -n 12 "$OUT/calibrate.txt"
"$KBX" results --db "$OUT/expert.db" --method expert | tee "$OUT/expert-run1-roofline.txt"
fi

if want compile; then
log "expert eval with the torch.compile baseline (compiled once, then cached per machine)"
step ${COMPILE_TIMEOUT:-500} "$KBX" eval --method expert --candidates solutions/expert --device cuda \
  --tasks "$TASKS" --baselines eager,compile --db "$OUT/compile.db" --fresh > "$OUT/eval-compile.log" 2>&1
"$KBX" results --db "$OUT/compile.db" --format json > "$OUT/compile.json" 2>/dev/null
python3 -c "import json; d=json.load(open('$OUT/compile.json')); [print(r['task'], r.get('speedup'), r.get('speedup_vs_compile')) for r in d['results']]"
fi

if want noprobe; then
log "expert eval without the probe (for the probe's overhead)"
KBX_PROBE_LIB=off step ${RUN_TIMEOUT:-200} "$KBX" eval --method expert --candidates solutions/expert --device cuda \
  --tasks "$TASKS" --db "$OUT/noprobe.db" --fresh > "$OUT/eval-noprobe.log" 2>&1
fi

if [ -f "$OUT/expert.db" ] && [ -f "$OUT/expert2.db" ]; then
  log "repeatability (run 1 vs run 2)"
  python3 bench/compare_runs.py "$OUT/expert.db" "$OUT/expert2.db" | tee "$OUT/repeatability.txt" | tail -n 3
fi
if [ -f "$OUT/noprobe.db" ] && [ -f "$OUT/expert.db" ]; then
  python3 bench/compare_runs.py "$OUT/noprobe.db" "$OUT/expert.db" --probe-overhead | tee "$OUT/probe-overhead.txt"
fi

if want exploits; then
log "planted timing exploits (each must get its own status)"
step ${EXPLOIT_TIMEOUT:-240} "$KBX" eval --method exploits --candidates tests/fixtures/timing-exploits --device cuda \
  --db "$OUT/exploits.db" --fresh > "$OUT/eval-exploits.log" 2>&1
"$KBX" results --db "$OUT/exploits.db" --format csv | cut -d, -f3,5 | tee "$OUT/exploits.csv"
python3 -c "import sys; sys.path.insert(0, 'bench'); import make_timing_exploits as m; print('expected:', m.EXPECTED)"
fi

if want check && [ "${SKIP_CHECK:-0}" != 1 ]; then
log "suite check (cuda) on $TASKS"
step ${CHECK_TIMEOUT:-110} "$KBX" suite check --device cuda --task "$TASKS" > "$OUT/suite-check.txt" 2>&1
tail -n 3 "$OUT/suite-check.txt"; grep -A3 FAIL "$OUT/suite-check.txt" | head -30
fi

if want probe && [ "${SKIP_PROBE:-0}" != 1 ] && [ -f .carry/lib/libkbx_probe.so ] && [ -f probe/tools/gpu_check.py ]; then
  log "probe check"
  step 45 python3 probe/tools/gpu_check.py --lib .carry/lib/libkbx_probe.so \
    --save "$OUT/probe-trace.bin" > "$OUT/probe-check.txt" 2>&1
  tail -n 25 "$OUT/probe-check.txt"
fi
[ -f "$OUT/expert.db" ] && "$KBX" results --db "$OUT/expert.db" --format json > "$OUT/expert-latest.json" 2>/dev/null
tar czf "$FINAL/$ARCHIVE" -C "$OUT" .
log done
