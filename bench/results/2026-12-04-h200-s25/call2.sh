#!/usr/bin/env bash
# session 25, call 2: GPU check of session 24's verdict changes. (1) bench/timing_hardening_gpu.sh
# (every timing attack, value_cache and the planted pointer-keyed cache included: the fresh-twin
# rule must still call them); (2) the compile workload's Loss/nll_loss (stale_result in session
# 24, expected numerical_mismatch now) beside Math/add and Loss/kl_div, --jobs 1.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
OUT=$OUT bash bench/timing_hardening_gpu.sh 2>&1 | tail -45
OUT=$OUT RUNS=serial SAMPLE=Loss/nll_loss,Loss/kl_div,Math/add TIMEOUT=150 SEED=7 bash bench/compile_workload_gpu.sh 2>&1 | tail -12
grep -h "nll_loss\|stale" $OUT/compile_workload/serial.log | grep -v "^kbx: reference\|timeline" | head
cd $OUT && tar czf hardening.tgz timing-hardening/*.txt timing-hardening/*.csv timing-hardening/*.log && gzip -f compile_workload/*.log
rm -rf timing-hardening compile_workload/cands compile_workload/*.db*
