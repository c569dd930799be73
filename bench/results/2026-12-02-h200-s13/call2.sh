#!/usr/bin/env bash
# session 13, call 2: the 184 references as candidates with this machine's eager timings cached
# (call 1's database: 163 tasks), references forked from their warm parent, reference chunks
# started only while memory and the work folder have room (sched/room.h); pipeline trace on.
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
echo "== $(date -u +%T) unit tests: slot, room gate"
timeout 60 .carry/bin/kbx_tests --gtest_filter='GpuSlot*:RoomGate*' > $OUT/unit-tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED \]" $OUT/unit-tests.txt
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
grep "reference worker for" $L | sed -E 's/.*hello after ([0-9.-]+) s/\1/' | sort -n | awk '{a[NR]=$1} END {print "ref worker hello after: n", NR, "median", a[int((NR+1)/2)], "max", a[NR]}'
grep "^eval" $L | grep -v " passed " | head
tail -n 2 $L
python3 bench/slot_profile.py $L --top 10 --trace $D/slot-trace.txt > $D/slot_profile.txt 2>&1; head -50 $D/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
gzip -f $L $D/slot-trace.txt
cd $OUT && python3 -c "import sqlite3; sqlite3.connect('profile.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; tar czf call2.tgz $k/profile/profile.log.gz $k/slot-trace.txt.gz $k/slot_profile.txt $k/shm-used.txt $k/profile-run.txt profile.db unit-tests.txt && rm -rf $k profile.db* unit-tests.txt
echo "== $(date -u +%T) done"
