#!/usr/bin/env bash
# Prepared in session 28 for the next GPU session, after session 27's next-call2.sh (the 184
# references warm with KBX_QUIET_CPU_FIRST=cuda): the same run with 3 finishing jobs freed at
# their worker's exit (--finishing-jobs 3, --finishing-from exit, the default from): a lane is
# then a job until its worker exits, and kbx's comparisons of its outputs (2.0 s a job on
# average in session 26, 370 lane-seconds of a 200 s run on 12 lanes) run beside the lane's next
# job. Unlike session 26's call 1 (3 finishing from the slot's hand-back: their workers alive,
# the GPU's memory full, slower), no more worker processes live at once than the lanes.
# The A/B is next-call2.sh's run: wall, slot idle, job timelines.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_QUIET_CPU_FIRST=cuda FINISHING_JOBS=3
unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
rm -rf $REF_CACHE
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem.txt 2>&1 ) &
SMI=$!
RUN=warm FROM_DB=/tmp/eager.db RUN_TIMEOUT=${RUN_TIMEOUT:-230} bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps' | tail -34
kill $SMI
echo "GPU memory used, MiB: max $(sort -n $OUT/gpu-mem.txt | tail -1)"
gzip -f $OUT/gpu-mem.txt
rm -rf /tmp/tl && mkdir -p /tmp/tl && tar xzf $OUT/call1-warm.tgz -C /tmp/tl
python3 bench/job_timelines.py /tmp/tl/warm/profile/profile.log.gz | tee $OUT/job-timelines.txt
rm -f $OUT/warm.db
