#!/usr/bin/env bash
# session 23, call 1: the 184 references as candidates, cold (a fresh database and an empty
# reference cache on the disk, which the run fills), then warm: that database's eager timings and
# the cache's reference work (what a second method, or a resumed run, on this machine finds).
# JOBS=12 REF_WORKERS=8 as in session 22. The cache stays in /var/tmp for call 2 (compile workload).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} REF_CACHE=${REF_CACHE:-/var/tmp/kbx-ref-cache}
export REF_CACHE_MB=${REF_CACHE_MB:-40000}
S=bench/results/2026-12-04-h200-s23
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
df -h /var/tmp /dev/shm | tail -n 2
rm -rf $REF_CACHE
RUN=cold RUN_TIMEOUT=${COLD_TIMEOUT:-330} bash $S/run184.sh | grep -v '^  idle\|^  gaps'
echo "reference cache: $(du -sm $REF_CACHE | cut -f1) MB in $(ls $REF_CACHE | wc -l) entries"
cp $OUT/cold.db /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db KEEP_REF_CACHE=1 RUN_TIMEOUT=${WARM_TIMEOUT:-200} bash $S/run184.sh | grep -v '^  idle\|^  gaps'
gzip -f $OUT/cold.db
rm -f $OUT/warm.db
