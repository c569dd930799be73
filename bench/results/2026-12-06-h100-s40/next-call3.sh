#!/usr/bin/env bash
# Prepared in session 40 (about 5 min, any GPU; timeout_s 330, carry .carry/): who holds the GPU's
# memory when 12 jobs run the compile workload (session 40 on an H100: 1.77 s per kernel, 16 of 136
# jobs out of memory beside the others, 14 of them references; the default, 6 jobs on 80 GB, took
# 3.24 s). bench/gpu_mem_by_role.py samples every process on the GPU beside the run and names it
# by its role (kbx's workers name themselves since session 40). Without an eager database on the
# machine the run times the eager baselines itself (its per-kernel figure is then not comparable
# with session 40's; what matters here is the memory and the re-runs for it). REF_WORKERS (5 by
# default here: what 6 lanes give) keeps the reference workers at the memory cap's number while
# the lanes go to 12: in session 40's 12-job run, 8 reference workers ran out of memory 14 times,
# the candidates twice. If that holds, the --jobs default could take its lanes from the cores and
# its reference workers from the GPU's memory.
# Writes $OUT/mem-jobs12.csv.gz, $OUT/mem-jobs12.txt (the summary) and $OUT/compile-jobs12.tgz.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
python3 bench/gpu_mem_by_role.py sample --out /tmp/mem-jobs12.csv --seconds 280 &
SAMPLER=$!
mkdir -p /tmp/c12 && OUT=/tmp/c12 TIMEOUT=240 JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-5} \
  bash bench/results/2026-12-05-cpu-s31/compile.sh 2>&1 | sed -n 1,4p
zcat /tmp/c12/compile_workload/full.log.gz | grep -c 'beside other' | sed 's/^/out of memory beside others: /'
kill $SAMPLER
python3 bench/gpu_mem_by_role.py summary /tmp/mem-jobs12.csv | tee $OUT/mem-jobs12.txt
gzip -c /tmp/mem-jobs12.csv > $OUT/mem-jobs12.csv.gz
tar czf $OUT/compile-jobs12.tgz -C /tmp c12
