#!/usr/bin/env bash
# Session 44, call 4 (carry .carry/ built from 4016ce3, timeout_s 600): the references' kernel
# cache on the GPU (bench/kernel_cache_gpu.sh: off, filled, read), then session 43's call2.sh
# (a 45 s warm-up, then the 184 references warm on the committed H100 eager timings) with the
# kernel cache on at its default folder, filled beforehand by the first step's kernels (the
# steady state of a machine that has run the suite once). Summary and one tarball.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
FINAL=$OUT
OUT=/tmp/kc bash bench/kernel_cache_gpu.sh 2>&1 | tee $FINAL/kernel-cache.txt
mkdir -p ~/.cache/kbx/torch-kernels && cp /tmp/kc/kernel-cache/kernels/* ~/.cache/kbx/torch-kernels/
OUT=$FINAL NAME=s44 bash bench/results/2026-12-06-h100-s43/call2.sh
zcat /tmp/x/warm/profile/profile.log.gz | grep -E "reference Math/(airy_ai|bessel_j1|chebyshev_polynomial_t|polygamma|zeta) \[ref\]" | tee -a $FINAL/summary.txt
echo "kernel cache after the run: $(ls ~/.cache/kbx/torch-kernels | wc -l) files" | tee -a $FINAL/summary.txt
