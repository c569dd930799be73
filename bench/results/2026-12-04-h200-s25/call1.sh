#!/usr/bin/env bash
# session 25, call 1: the 184 references as candidates, cold (fresh database, empty reference
# cache on the disk at the default cap, 16384 MB, kept by worth since b667bd0), then warm (that
# database's eager timings and whatever the cache kept). Does the warm run reach 180 s?
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 JOBS=12 REF_WORKERS=8
export REF_CACHE=/var/tmp/kbx-ref-cache
unset REF_CACHE_MB
S=bench/results/2026-12-03-h200-s15/call1.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
rm -rf $REF_CACHE
RUN=cold RUN_TIMEOUT=${COLD_TIMEOUT:-315} bash $S | grep -v '^  idle\|^  gaps' | tail -42
echo "reference cache: $(du -sm $REF_CACHE | cut -f1) MB in $(ls $REF_CACHE | wc -l) entries"
for w in $REF_CACHE/*/worth.json; do echo "$(cat $w | tr -d '\n ') $(basename $(dirname $w))"; done > $OUT/cache-worth.txt
cp $OUT/cold.db /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db KEEP_REF_CACHE=1 RUN_TIMEOUT=${WARM_TIMEOUT:-205} bash $S | grep -v '^  idle\|^  gaps' | tail -42
gzip -f $OUT/cold.db
rm -f $OUT/warm.db
