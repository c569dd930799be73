#!/usr/bin/env bash
# session 24, call 2 (as run): the 184 references as candidates, cold (fresh database), then warm
# (that database's eager timings; no reference cache), GPU memory sampled during the warm run.
# Call 1's "warm" run found no cached eager timing: the eager baselines are keyed by the worker's
# code, which 651da0e changed, so session 23's database did not serve. This call makes its own.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 JOBS=12 REF_WORKERS=8
S=bench/results/2026-12-03-h200-s15/call1.sh
RUN=cold RUN_TIMEOUT=315 bash $S | grep -v '^  idle\|^  gaps' | tail -40
cp $OUT/cold.db /tmp/cold.db
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem-warm.txt 2>&1 ) &
SMI=$!
RUN=warm FROM_DB=/tmp/cold.db RUN_TIMEOUT=215 bash $S | grep -v '^  idle\|^  gaps' | tail -40
kill $SMI
echo "GPU memory used (warm), MiB: max $(sort -n $OUT/gpu-mem-warm.txt | tail -1)"
gzip -f $OUT/gpu-mem-warm.txt $OUT/cold.db
rm -f $OUT/warm.db
