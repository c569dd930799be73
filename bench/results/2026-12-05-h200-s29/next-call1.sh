#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 7 min):
# (1) probe/tools/slot_arm_check.py, fixed (its worker now a file: triton.jit needs one); the
#     probe's request for the slot at a Triton launch, an eager op, a copy, cuBLAS and a
#     torch.compile call's first launch, none for CPU work, exit 3 on a closed pipe;
# (2) bench/sandbox_gpu.sh: the sandbox and supervisor attacks on cuda, and the new
#     gpu_memory_hog (a candidate holding the GPU's free memory for 20 s beside five tasks, one
#     of them fused_pairwise_distance_normalize with its 32 GiB shadow: all must pass; before
#     session 29 that reference got reference_error beside other jobs).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
timeout 180 python3 probe/tools/slot_arm_check.py --lib .carry/lib/libkbx_probe.so 2>&1 | tee $OUT/slot_arm_check.txt | tail -20
# (3) CUDA's start in 1-16 forked children at once, without and with the probe (about 40 s): a job
#     took a median 3.3 s from cuda_next to its import in session 29's call 2
timeout 150 python3 bench/spawn_cost.py --probe .carry/lib/libkbx_probe.so 2>&1 | tee $OUT/spawn_cost.txt | grep CUDA
OUT=$OUT bash bench/sandbox_gpu.sh 2>&1 | tail -40
cd $OUT && tar czf sandbox.tgz sandbox/*.txt sandbox/tmp-hog/*/eval.log 2>/dev/null; rm -rf sandbox
