#!/usr/bin/env bash
# The reference workers' kernel cache (--kernel-cache) on the GPU: the suite's five tasks whose
# references call kernels PyTorch compiles at run time with NVRTC (torch.special's airy_ai,
# bessel_j1, chebyshev_polynomial_t, polygamma, zeta), each reference judged as its own
# candidate, correctness only (--no-time), the reference cache off. Three runs: the kernel cache
# off, then a fresh one (filled by the run), then the same (read). Printed: each run's wall time,
# each task's reference seconds (KBX_DEBUG_TIMING's "cases in" line) and the verdicts, which must
# all be `passed`; then what the cache holds.
#   OUT=/dir bash bench/kernel_cache_gpu.sh   (DEVICE=cpu: the script itself, on the CPU)
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/kernel-cache
TASKS=Math/airy_ai,Math/bessel_j1,Math/chebyshev_polynomial_t,Math/polygamma,Math/zeta
mkdir -p "$OUT/cands"
for t in ${TASKS//,/ }; do
  mkdir -p "$OUT/cands/$(dirname $t)"
  cp "tasks/$t/reference.py" "$OUT/cands/$t.py"
done
KERNELS=$OUT/kernels
rm -rf "$KERNELS" "$OUT"/off.db* "$OUT"/fill.db* "$OUT"/read.db*
run() {  # name, --kernel-cache value
  local t0=$(date +%s%N)
  KBX_DEBUG_TIMING=1 "$KBX" eval --method "$1" --candidates "$OUT/cands" --tasks "$TASKS" \
    --device "${DEVICE:-cuda}" --track any --no-time --ref-cache off --kernel-cache "$2" \
    --db "$OUT/$1.db" > "$OUT/$1.log" 2>&1
  local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  printf '%s: exit %s, %d.%03d s wall\n' "$1" "$rc" $((ms / 1000)) $((ms % 1000))
  grep -o "reference [A-Za-z/_0-9]* \[ref\]: [0-9]* cases in [0-9.]* s" "$OUT/$1.log" | sed 's/^/  /'
  grep "^eval [0-9]*/[0-9]* " "$OUT/$1.log" | sed 's/^/  /'  # each candidate's job, its wall time
  "$KBX" results --db "$OUT/$1.db" --format csv | cut -d, -f3,5 | sed 's/^/  /'
}
run off off
run fill "$KERNELS"
run read "$KERNELS"
echo "kernel cache: $(ls "$KERNELS" | wc -l) files, $(du -sk "$KERNELS" | cut -f1) KiB"
ls "$KERNELS" | sed 's/_[0-9a-f]\{40\}$//' | sort | uniq -c | sed 's/^/  /'
