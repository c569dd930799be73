#!/usr/bin/env bash
# Session 47's device call (name nvidia-h200; carry .carry/; timeout_s 570). Only an H200 can give
# issue 14's missing number (the 184 references warm in at most 180 s), so the long run is spent
# on an H200 alone: on an H200, session 46's next-call.sh (the host's facts, then the 184
# references cold and warm); on any other GPU, a short check instead, keeping the budget for a
# later H200: the host's facts, and with HOG=1 (call 1) the gpu_memory_hog attack on the GPU.
export PATH=/opt/torch/.venv/bin:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu" | tee $OUT/gpu.txt
case "$gpu" in
  # the cold run cut at COLD_TIMEOUT s (default 260: the budget left; the warm run times the rest)
  *H200*) COLD_TIMEOUT=${COLD_TIMEOUT:-260} exec bash bench/results/2026-12-06-h100-s46/next-call.sh ;;
esac
PYTHONPATH=$PWD/python python3 -c "
from kbx_worker.calibrate_mode import host_facts
print('host:', host_facts())" 2>&1 | tee -a $OUT/gpu.txt
[ "${HOG:-0}" = 1 ] || exit 0
KBX_BIN=$PWD/.carry/bin/kbx KBX_ADVERSARIAL_DEVICE=cuda timeout 400 \
  python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu_memory_hog.py 2>&1 | tail -15 |
  tee $OUT/gpu_memory_hog.txt
