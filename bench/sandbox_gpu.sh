#!/usr/bin/env bash
# The sandbox on the GPU machine, in one call (about 4 minutes): kbx doctor's sandbox lines, then
# tests/python/test_adversarial_sandbox.py with --device cuda (every sandbox attack beside an
# honest kernel, and the control run without the confinement), then test_supervisor.py's attack
# tests with --device cuda. Expects the kbx binary in .carry/
# (bench/README.md) and pytest in the machine's Python (the H200 image has it).
#   OUT=/dir bash bench/sandbox_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export KBX_BIN=${KBX_BIN:-$PWD/.carry/bin/kbx}
[ -x "$KBX_BIN" ] || KBX_BIN=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/sandbox
mkdir -p "$OUT"
"$KBX_BIN" doctor 2>&1 | tee "$OUT/doctor.txt" | grep -E "sandbox|gpu|torch|triton"
KBX_ADVERSARIAL_DEVICE=cuda timeout --signal=KILL "${SANDBOX_TIMEOUT:-400}" \
  python3 -m pytest -q -p no:cacheprovider --basetemp="$OUT/tmp" \
  tests/python/test_adversarial_sandbox.py > "$OUT/pytest.txt" 2>&1
rc=$?
tail -n 30 "$OUT/pytest.txt"
# The supervisor's attacks on cuda (the ones that run a candidate; the tests that kill kbx are
# the CPU's alone)
KBX_ADVERSARIAL_DEVICE=cuda timeout --signal=KILL "${SUPERVISOR_TIMEOUT:-240}" \
  python3 -m pytest -q -rf --tb=short -p no:cacheprovider --basetemp="$OUT/tmp-supervisor" \
  -k "attacks_in_one_run or closes_its_pipes" tests/python/test_supervisor.py \
  > "$OUT/pytest-supervisor.txt" 2>&1
rc_supervisor=$?
tail -n 15 "$OUT/pytest-supervisor.txt"
[ $rc -eq 0 ] && rc=$rc_supervisor
# A candidate holding the GPU's memory beside other tasks (tests/adversarial/sandbox/gpu_memory_hog;
# about 2 minutes; HOG=0 leaves it out)
if [ "${HOG:-1}" != 0 ]; then
  KBX_ADVERSARIAL_DEVICE=cuda timeout --signal=KILL "${HOG_TIMEOUT:-300}" \
    python3 -m pytest -q -p no:cacheprovider --basetemp="$OUT/tmp-hog" \
    tests/python/test_gpu_memory_hog.py > "$OUT/pytest-hog.txt" 2>&1
  rc_hog=$?
  tail -n 15 "$OUT/pytest-hog.txt"
  [ $rc -eq 0 ] && rc=$rc_hog
fi
# Each test's verdicts, flat in $OUT (the device tool does not bring back folders this deep)
for db in "$OUT"/tmp/*/*.db "$OUT"/tmp-supervisor/*/*.db "$OUT"/tmp-hog/*/*.db; do
  [ -f "$db" ] || continue
  case "$db" in *current/*) continue ;; esac  # pytest's link to the newest folder
  test_dir=$(basename "$(dirname "$db")")
  "$KBX_BIN" results --db "$db" > "$OUT/results-${test_dir}-$(basename "${db%.db}").txt" 2>&1
done
rm -rf "$OUT"/tmp/*/work "$OUT"/tmp-supervisor/*/work "$OUT"/tmp-hog/*/work
echo "sandbox on the GPU: exit $rc"
exit $rc
