#!/usr/bin/env bash
# session 25, call 3: the timer's host-bound budget (250 ms, 6ee...: see README) on the 184
# references as candidates, cold (the worker's code changed, so nothing of call 1's is cached:
# fresh database, empty reference cache at the default cap), then warm (that database's eager
# timings and whatever the cache kept), as call 1. Then the honest verdict candidate
# gelu_timed_path_drifts (session 24, never run on a GPU).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 JOBS=12 REF_WORKERS=8
export REF_CACHE=/var/tmp/kbx-ref-cache
unset REF_CACHE_MB
S=bench/results/2026-12-03-h200-s15/call1.sh
rm -rf $REF_CACHE
RUN=cold RUN_TIMEOUT=${COLD_TIMEOUT:-290} bash $S | grep -v '^  idle\|^  gaps' | tail -30
echo "reference cache: $(du -sm $REF_CACHE | cut -f1) MB in $(ls $REF_CACHE | wc -l) entries"
cp $OUT/cold.db /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db KEEP_REF_CACHE=1 RUN_TIMEOUT=${WARM_TIMEOUT:-200} bash $S | grep -v '^  idle\|^  gaps' | tail -42
gzip -f $OUT/cold.db
rm -f $OUT/warm.db
OUT=$OUT/verdict ONLY=gelu_timed_path_drifts KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so timeout 60 bash bench/verdict_accuracy_gpu.sh 2>&1 | tail -4
rm -f $OUT/verdict/*.db*
