#!/usr/bin/env bash
# session 14, call 1: the 184 references as candidates with session 13's database (163 tasks'
# eager timings cached) under what session 13 could not run on the GPU: the room gate's
# per-category guess, heaviest tasks first, judges forked warm, the binomial and uniform judges
# on the device; then the experts of those two tasks.
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,)
k=warm
cp .carry/db/cold.db $OUT/profile.db
echo "== $(date -u +%T) references as candidates, all tasks: $k"
mkdir -p $OUT/$k
( while sleep 3; do echo "$(df -m --output=used /dev/shm | tail -1) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)"; done ) > $OUT/$k/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/$k/slot-trace.txt
D=$OUT/$k
OUT=$D DB=$D/../profile.db PROFILE_TIMEOUT=${WARM_TIMEOUT:-330} TASKS=$TASKS bash bench/pipeline_profile_gpu.sh > $D/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $D/profile-run.txt
L=$D/profile/profile.log
echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $D/shm-used.txt | tail -1 | cut -d' ' -f1); MemAvailable min MB: $(awk '{print $2}' $D/shm-used.txt | sort -n | head -1)"
echo "eager from the cache: $(grep -c 'eager timings from this machine' $L) tasks"
grep "judge of" $L | head -3
grep "judge of" $L | grep -E "bitwise_and_binomial|rand\b|Random/rand" | head -6
grep "^eval" $L | grep -v " passed " | head
tail -n 2 $L
python3 bench/slot_profile.py $L --top 10 --trace $D/slot-trace.txt > $D/slot_profile.txt 2>&1; head -40 $D/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
gzip -f $L $D/slot-trace.txt
echo "== $(date -u +%T) experts of the two judges moved to the device"
KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx3 KBX_DEBUG_TIMING=1 timeout --signal=INT 150 $KBX eval --method expert \
  --candidates solutions/expert --tasks Math/bitwise_and_binomial,Random/rand --device cuda --db $OUT/judges.db --fresh > $OUT/judges.log 2>&1
echo "exit $?"; grep -E "^eval|judge of" $OUT/judges.log
rm -rf /dev/shm/kx3
cd $OUT && python3 -c "import sqlite3; sqlite3.connect('profile.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; gzip -f judges.log; tar czf call1.tgz $k/profile/profile.log.gz $k/slot-trace.txt.gz $k/slot_profile.txt $k/shm-used.txt $k/profile-run.txt profile.db judges.log.gz && rm -rf $k profile.db* judges.*
echo "== $(date -u +%T) done"
