#!/usr/bin/env bash
# Issue 13 on the GPU: the verdict candidates of tests/adversarial/verdict and the 12 experts
# under `kbx eval --device cuda` (binary and probe carried in .carry/, as for bench/gpu_session.sh).
# Prints per candidate the status at strict/core/kbx, glue_share and kernel_share against what is
# expected, and exits nonzero on any mismatch. Databases go to $OUT (default ./gpu-out).
#   [SKIP_EXPERT=1] [ONLY="name name ..."] bench/verdict_accuracy_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
[ -n "${KBX_PROBE_LIB:-}" ] || { [ -f .carry/lib/libkbx_probe.so ] && export KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so; }
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-verdict}
export PYTHONUNBUFFERED=1
fail=0
# name  dir  strict  core  kbx  glue(>0|-)  [track, default kbx's]; "!passed" is any failing
# status. gelu_wrong_specials
# failed core on the GPU while it gave +-1000 at exactly +-1, which random full-size cases hold now
# and then (seen on the H200, 2026-12-01; on the CPU a small case in session 41's CI); since
# session 41 it is wrong only at -7.25 and at subnormals, which no random case holds.
expect=(
  "gelu_wrong_specials tests/adversarial/verdict/gelu_wrong_specials numerical_mismatch passed passed -"
  "gelu_f32_only tests/adversarial/verdict/gelu_f32_only !passed !passed passed -"
  "add_broadcast_contiguous tests/adversarial/verdict/add_broadcast_contiguous passed passed passed >0"
  "softmax_transpose_copy tests/adversarial/verdict/softmax_transpose_copy passed passed passed >0"
  "matmul_token_launch tests/adversarial/verdict/matmul_token_launch fallback fallback fallback -"
  "compiled_handle tests/adversarial/verdict/compiled_handle passed passed passed -"
  "gelu_timed_path_drifts tests/adversarial/verdict/gelu_timed_path_drifts numerical_mismatch numerical_mismatch passed -"
  "random_second_draw tests/adversarial/verdict/random_second_draw random_contract random_contract random_contract - any"
  "skip_rows tests/adversarial/verdict/skip_rows numerical_mismatch numerical_mismatch numerical_mismatch -"
  "expert solutions/expert passed passed passed -"
)
for line in "${expect[@]}"; do
  read -r name dir e_strict e_core e_kbx e_glue track <<< "$line"
  [ "${SKIP_EXPERT:-0}" = 1 ] && [ "$name" = expert ] && continue
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]] && continue
  db="$OUT/verdict-$name.db"
  timeout --signal=KILL 1500 "$KBX" eval --method "$name" --candidates "$dir" --device cuda \
    --db "$db" --fresh ${track:+--track "$track"} > "$OUT/verdict-$name.log" 2>&1 ||
    echo "$name: eval exited $?"
  "$KBX" results --db "$db" --format csv > "$OUT/verdict-$name.csv" 2>&1
  python3 - "$OUT/verdict-$name.csv" "$name" "$e_strict" "$e_core" "$e_kbx" "$e_glue" <<'PY' || fail=1
import csv, sys
path, name, e_strict, e_core, e_kbx, e_glue = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
bad = not rows
for r in rows:
    got = (r["strict"], r["core"], r["kbx"])
    want = (e_strict, e_core, e_kbx)  # "!passed": any failure
    ok = all(g != "passed" if w == "!passed" else g == w for g, w in zip(got, want))
    glue = r.get("glue_share", "")
    if e_glue == ">0":
        ok = ok and glue not in ("", "0", "0.0000") and float(glue) > 0
    bad |= not ok
    print(f"{'OK  ' if ok else 'FAIL'} {name:26} {r['task']:36} strict={got[0]} core={got[1]} "
          f"kbx={got[2]} (expected {e_strict}/{e_core}/{e_kbx}) glue_share={glue or '-'} "
          f"kernel_share={r['kernel_share'] or '-'} values_ok={r['strict_values_ok']}")
sys.exit(1 if bad else 0)
PY
done
[ $fail -eq 0 ] && echo "verdict accuracy: all as expected" || echo "verdict accuracy: MISMATCH"
exit $fail
