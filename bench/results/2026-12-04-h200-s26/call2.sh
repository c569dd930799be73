#!/usr/bin/env bash
# session 26, call 2: (1) bench/timing_hardening_gpu.sh, the first GPU check of session 25's
# quiet-host change (a GPU-only hush no longer waits for the frozen cgroups to report stopped:
# quiet_hog must still be caught) and of the slot hand-back; (2) one warm run of the 184
# references as candidates from session 25 call 3's eager timings, empty reference cache, at
# the defaults, now without finishing jobs (--finishing-jobs 0): compare with call 1's run 1
# (the lane gate's 3 more: 156 of 184 in 230 s, GPU memory full).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
OUT=$OUT bash bench/timing_hardening_gpu.sh 2>&1 | tail -40
cd $OUT && tar czf hardening.tgz timing-hardening/*.txt timing-hardening/*.csv timing-hardening/*.log; rm -rf timing-hardening; cd - >/dev/null
unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
rm -rf $REF_CACHE
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem.txt 2>&1 ) &
SMI=$!
RUN=warm FROM_DB=/tmp/eager.db RUN_TIMEOUT=${RUN_TIMEOUT:-230} bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps' | tail -32
kill $SMI
echo "GPU memory used, MiB: max $(sort -n $OUT/gpu-mem.txt | tail -1)"
gzip -f $OUT/gpu-mem.txt
rm -f $OUT/warm.db
