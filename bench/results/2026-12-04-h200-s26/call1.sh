#!/usr/bin/env bash
# Run in session 26 as call 1 (prepared in session 25 as next-call1.sh).
# Prepared in session 25 for the next GPU session (not yet run): the 184 references as
# candidates with the default --jobs and --reference-workers (12 and 8 on the H200's 16 cores,
# the lane gate's 3 more finishing) and the quiet host's GPU-only hushes without the cgroup wait.
# The worker's code is as in call 3, so call 3's database still holds every task's eager timings
# (they are keyed by the worker's sources and the machine, not by kbx's binary): both runs start
# warm. Run 1 fills the reference cache (default cap), run 2 finds it. GPU memory sampled (the
# lane gate lets 15 jobs live at once). Does run 2 reach 180 s?
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
S=bench/results/2026-12-03-h200-s15/call1.sh
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
rm -rf $REF_CACHE
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem.txt 2>&1 ) &
SMI=$!
RUN=warm1 FROM_DB=/tmp/eager.db RUN_TIMEOUT=${RUN_TIMEOUT:-230} bash $S | grep -v '^  idle\|^  gaps' | tail -32
echo "reference cache: $(du -sm $REF_CACHE | cut -f1) MB in $(ls $REF_CACHE | wc -l) entries"
RUN=warm2 FROM_DB=/tmp/eager.db KEEP_REF_CACHE=1 RUN_TIMEOUT=${RUN_TIMEOUT:-230} bash $S | grep -v '^  idle\|^  gaps' | tail -32
kill $SMI
echo "GPU memory used, MiB: max $(sort -n $OUT/gpu-mem.txt | tail -1)"
gzip -f $OUT/gpu-mem.txt
rm -f $OUT/warm1.db $OUT/warm2.db
