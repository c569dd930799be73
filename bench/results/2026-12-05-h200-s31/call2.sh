#!/usr/bin/env bash
# Session 31, call 2 (about 8.5 min, on call 1's machine): the compile workload with the compiler
# preload (eager timings from call 1's database), then the neighbour_queue attack against the
# MatrixMultiply tasks' baselines and candidates' timings.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p $OUT/compile
OUT=$OUT/compile TIMEOUT=${TIMEOUT:-270} bash bench/results/2026-12-05-cpu-s31/compile.sh 2>&1 | tail -45
VICTIMS=MatrixMultiply/addmm,MatrixMultiply/matmul,MatrixMultiply/matmul_bf16,MatrixMultiply/tensordot_rsqrt,MatrixMultiply/matrix_multiply_symmetric \
  RUN_TIMEOUT=${RUN_TIMEOUT:-90} OUT=$OUT bash bench/neighbour_attack_gpu.sh 2>&1 | tail -45
cd $OUT && tar czf neighbour-attack.tgz neighbour-attack/*.log 2>/dev/null; rm -rf neighbour-attack/*-cands neighbour-attack/*.db*
