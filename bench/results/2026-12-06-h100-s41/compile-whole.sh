#!/usr/bin/env bash
# Session 41 (about 8 min, any GPU; timeout_s 540, carry .carry/): issue 14's compile workload as a
# whole run (every task's torch.compile candidate, cold caches, not cut: session 40's figures came
# from runs cut at 240 s), with JOBS lanes (12 here) and REF_WORKERS reference workers (5: what the
# GPU-memory cap's 6 lanes give), beside bench/gpu_mem_by_role.py's sampler: who holds the GPU's
# memory, and how many jobs ran out of it beside the others.
# JOBS= and REF_WORKERS= (set, empty) leave them to kbx's defaults.
# Run it after cold-variant.sh on the same machine: its eager database (/var/tmp/kbx-eager-s30.db)
# then gives the eager baselines; EAGER_REDRAW=1 (the default here) matches that database's kind.
# Writes $OUT/mem.txt (summary), $OUT/mem.csv.gz and $OUT/compile.tgz (walls, logs, timelines).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ "${EAGER_REDRAW:-1}" = 1 ] && export KBX_EAGER_REDRAW=1
python3 bench/gpu_mem_by_role.py sample --out /tmp/mem.csv --seconds $((${TIMEOUT:-420} + 40)) &
SAMPLER=$!
mkdir -p /tmp/cw && OUT=/tmp/cw TIMEOUT=${TIMEOUT:-420} JOBS=${JOBS-12} REF_WORKERS=${REF_WORKERS-5} \
  bash bench/results/2026-12-05-cpu-s31/compile.sh 2>&1 | sed -n 1,6p
zcat /tmp/cw/compile_workload/full.log.gz | grep -c 'beside other' | sed 's/^/out of memory beside others: /'
kill $SAMPLER 2>/dev/null
python3 bench/gpu_mem_by_role.py summary /tmp/mem.csv | tee $OUT/mem.txt
gzip -c /tmp/mem.csv > $OUT/mem.csv.gz
cat /tmp/cw/compile_workload/walls.txt
tar czf $OUT/compile.tgz -C /tmp cw
