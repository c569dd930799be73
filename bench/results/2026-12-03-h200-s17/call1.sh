#!/usr/bin/env bash
# session 17, call 1: the timer's settle against another context's queued matmuls
# (bench/settle_gpu.py), the slot holder's OpenMP pool on the H200 (bench/pinned_pool.py), then
# the 184 references as candidates, cold (run184.sh; the worker hash changed in session 16, so
# nothing is cached): the database it leaves is call 2's.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
S=bench/results/2026-12-03-h200-s17
echo "== $(date -u +%T) settle"; timeout 60 python3 bench/settle_gpu.py --hog-ms 600 2>&1 | tail -n 12
echo "== $(date -u +%T) pinned pool"; timeout 90 python3 bench/pinned_pool.py --calls 1 2>&1 | tail -n 8
nproc; python3 -c "import torch; print(torch.__version__, torch.get_num_threads())"
RUN=cold RUN_TIMEOUT=${RUN_TIMEOUT:-420} bash $S/run184.sh
