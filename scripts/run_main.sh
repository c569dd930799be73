#!/usr/bin/env bash
# The main job: evaluate the bundled expert kernels on the local GPU and write a report; without
# a GPU, say so and run the CPU self-check of the suite and of the expert kernels instead.
set -euo pipefail
KBX=${1:-build/kbx}
PY=${KBX_PYTHON:-python3}
out=${KBX_REPORT:-report.md}
if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "kbx: GPU found: evaluating the expert kernels on it"
  "$KBX" eval --method expert --candidates solutions/expert --device cuda --db kbx.db
else
  echo "kbx: no CUDA GPU visible to torch: running the CPU self-check (Triton interpreter, edge and small cases)"
  "$KBX" suite check --device cpu
  "$KBX" eval --method expert --candidates solutions/expert --device cpu --db kbx.db
fi
"$KBX" results --db kbx.db --method expert
"$KBX" results --db kbx.db --method expert --format markdown > "$out"
echo "kbx: report written to $out"
