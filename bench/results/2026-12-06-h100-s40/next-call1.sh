#!/usr/bin/env bash
# Prepared in session 40 for the next GPU session's first call (about 5 min, any GPU; timeout_s
# 420, carry .carry/):
#   1. bench/conv_workspace_gpu.py: does the resnet_56 convolution (4.48 against 2.97 ms between
#      the two sides of one case in session 40's run with kept outputs) slow down when the GPU's
#      free memory is short (cuDNN taking a plan with less workspace)?
#   2. bench/pressure_gpu.py with kbx's own CudaTimer beside the plain events: does kbx's timer (L2
#      scrub, holds) see the slow state where the plain events do, and does it escape it with
#      three outputs kept, as the plain events did in session 40 and kbx's runs did not?
# Then, on the same machine: bash bench/results/2026-12-06-h100-s39/next-call2.sh (the A/B of an
# empty allocator cache before each eager timing; about 5 min, timeout_s 400).
# Writes $OUT/conv.txt, $OUT/pressure.txt and $OUT/pressure.json.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 python3 bench/conv_workspace_gpu.py 2>&1 | tee $OUT/conv.txt
timeout 270 python3 bench/pressure_gpu.py --out $OUT/pressure.json 2>&1 | grep -v 'a round left out' |
  tee $OUT/pressure.txt | grep -v '^  slow rounds\|^  place:'
