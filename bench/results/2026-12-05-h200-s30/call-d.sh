#!/usr/bin/env bash
# Session 30, last call (about 3.5 min): does the timer's longer settle burst see another
# process's GPU work (neighbour_gpu.py, exit 0 when it does)? Then the neighbour_queue attack
# against the eager baselines of five MatrixMultiply tasks, clean run first.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
timeout 80 python3 bench/neighbour_gpu.py 2>&1 | tee $OUT/neighbour3.txt | grep -v "^neighbour:\|^queued\|^running" | cut -c1-220
VICTIMS=MatrixMultiply/addmm,MatrixMultiply/matmul,MatrixMultiply/matmul_bf16,MatrixMultiply/tensordot_rsqrt,MatrixMultiply/matrix_multiply_symmetric \
  RUN_TIMEOUT=${RUN_TIMEOUT:-90} OUT=$OUT bash bench/neighbour_attack_gpu.sh 2>&1 | tail -40
cd $OUT && tar czf neighbour-attack.tgz neighbour-attack/*.log 2>/dev/null; rm -rf neighbour-attack/*-cands
