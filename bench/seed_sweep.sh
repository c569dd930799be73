#!/usr/bin/env bash
# Honest kernels over many seeds: the bundled experts (solutions/expert) on the CPU, one kbx eval
# per seed, and every case that is not `passed` listed. A false numerical_mismatch shows up here
# long before it flakes a CI run (the zero-dim Math/add case failed one seed in about a thousand).
# Usage: bench/seed_sweep.sh FIRST_SEED COUNT [OUT_DIR]   (KBX: the binary, default build/kbx;
# KBX_PYTHON: the Python, default scripts/setup.sh's)
set -euo pipefail
first=${1:?first seed}; count=${2:?how many seeds}; out=${3:-/tmp/kbx-seed-sweep}
kbx=${KBX:-build/kbx}
export KBX_PYTHON=${KBX_PYTHON:-$(bash scripts/setup.sh | tail -n 1)}
mkdir -p "$out"
: > "$out/failures.txt"
for seed in $(seq "$first" $((first + count - 1))); do
  db="$out/seed$seed.db"
  rm -f "$db"*
  KBX_REF_CACHE=off OMP_NUM_THREADS=1 "$kbx" eval --method expert --candidates solutions/expert \
    --device cpu --jobs "$(nproc)" --seed "$seed" --db "$db" > "$out/seed$seed.log" 2>&1 \
    || { echo "seed $seed: kbx eval failed (see $out/seed$seed.log)" >> "$out/failures.txt"; continue; }
  sqlite3 -separator ' ' "$db" "SELECT '$seed', r.task, c.name, c.status, c.error_ratio, c.detail
      FROM case_results c JOIN results r ON r.id = c.result_id WHERE c.status != 'passed'" \
    >> "$out/failures.txt"
  tasks=$(sqlite3 "$db" "SELECT count(*) FROM results")
  echo "seed $seed: $tasks tasks, $(grep -c "^$seed " "$out/failures.txt" || true) failed cases"
  rm -f "$db"*
done
echo "failures: $out/failures.txt ($(wc -l < "$out/failures.txt") lines)"
