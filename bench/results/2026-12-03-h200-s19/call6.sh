#!/usr/bin/env bash
# session 19, call 6 (the last 164 s of device time): a small check of what changed after call 5,
# on cuda: the timer asking for the quiet host before its warm-up, the reference worker's
# files_written. Three references as candidates (masked_select: host-bound), timed.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
export KBX_SLOT_TRACE=$OUT/trace.txt KBX_REF_CACHE=off
OUT=$OUT TASKS=Activation/gelu,Index/masked_select,Math/add JOBS=3 PROFILE_TIMEOUT=${T:-45} bash bench/pipeline_profile_gpu.sh
L=$OUT/profile/profile.log
grep "^eval" $L
echo "quiet_wait_s: $(grep -o 'quiet_wait_s=[0-9.]*' $L | cut -d= -f2 | tr '\n' ' ')"
echo "hushes: $(grep -c ' hush ' $OUT/trace.txt)"
python3 bench/slot_profile.py $L --trace $OUT/trace.txt 2>&1 | grep -E "quiet|slot gpu" | head -5
gzip -f $L; rm -rf $OUT/profile/refcands /dev/shm/kbx-work-profile
