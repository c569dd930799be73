#!/usr/bin/env bash
# `kbx suite check --device cuda`, one category at a time under its own time limit, on the GPU
# machine (binary carried in .carry/, as for bench/gpu_session.sh). Logs and a summary are
# archived into $OUT/$ARCHIVE (default suite-check.tgz); the summary is printed last.
# DEADLINE (epoch seconds) stops starting categories after it.
# LOGS, KBX_WORK and ARCHIVE let two copies run side by side (one per GPU).
#   bench/gpu_suite_check.sh [Category ...]      (default: all 15)
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/gpu-out}
LOGS=${LOGS:-/tmp/kbx-suite-check}
ARCHIVE=${ARCHIVE:-suite-check.tgz}
rm -rf "$LOGS"; mkdir -p "$LOGS" "$FINAL"
KBX=$PWD/.carry/bin/kbx
export KBX_WORK=${KBX_WORK:-/dev/shm/kbx-check}
export PYTHONUNBUFFERED=1
cats=("$@")
[ ${#cats[@]} -gt 0 ] || cats=(Activation Convolution Fusion Index LinearAlgebra Loss Math
                              MatrixMultiply Normalization Optimizer Pooling Quantization Random
                              Reduce SpatialOps)
deadline=${DEADLINE:-0}   # epoch seconds after which no category starts (0: none)
for c in "${cats[@]}"; do
  start=$(date +%s)
  limit=${CATEGORY_TIMEOUT:-240}
  if [ "$deadline" -gt 0 ]; then
    left=$(( deadline - start ))
    if [ "$left" -lt 20 ]; then echo "$c: not run (deadline)" | tee -a "$LOGS/summary.txt"; continue; fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  timeout --signal=KILL "$limit" "$KBX" suite check --device cuda --category "$c" \
    > "$LOGS/$c.txt" 2>&1
  rc=$?
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOGS/$c.txt" | tail -n 1)
  echo "$c: ${line:-no result (exit $rc)} in $(( $(date +%s) - start )) s" | tee -a "$LOGS/summary.txt"
  grep -A4 '^FAIL' "$LOGS/$c.txt" | head -20 >> "$LOGS/failures.txt"
  rm -rf "$KBX_WORK"
done
tar czf "$FINAL/$ARCHIVE" -C "$LOGS" .
cat "$LOGS/failures.txt" 2>/dev/null | head -60
cat "$LOGS/summary.txt"
