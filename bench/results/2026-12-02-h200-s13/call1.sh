#!/usr/bin/env bash
# session 13, call 1: the 184 references as candidates, cold (no eager timings, no reference
# cache), with references forked from their own warm parent; the pipeline trace on. Its
# database is kept for call 2 (eager timings cached on this machine).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,)
k=cold
echo "== $(date -u +%T) references as candidates, all tasks: $k; /dev/shm size $(df -h --output=size /dev/shm | tail -1)"
mkdir -p $OUT/$k
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/$k/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/$k/slot-trace.txt
D=$OUT/$k
OUT=$D DB=$D/../profile.db PROFILE_TIMEOUT=${COLD_TIMEOUT:-430} TASKS=$TASKS bash bench/pipeline_profile_gpu.sh > $D/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $D/profile-run.txt
L=$D/profile/profile.log
echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $D/shm-used.txt | tail -1)"
echo "eager from the cache: $(grep -c 'eager timings from this machine' $L) tasks"
grep "reference worker for" $L | head -3
grep "reference worker for" $L | sed -E 's/.*hello after ([0-9.-]+) s/\1/' | sort -n | awk '{a[NR]=$1} END {print "ref worker hello after: n", NR, "median", a[int((NR+1)/2)], "max", a[NR]}'
grep "^eval" $L | grep -v " passed " | head
tail -n 3 $L
python3 bench/slot_profile.py $L --top 15 --trace $D/slot-trace.txt > $D/slot_profile.txt 2>&1; cat $D/slot_profile.txt | head -70
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
gzip -f $L $D/slot-trace.txt
cd $OUT && tar czf call1.tgz $k/profile/profile.log.gz $k/slot-trace.txt.gz $k/slot_profile.txt $k/shm-used.txt $k/profile-run.txt profile.db && rm -rf $k profile.db
echo "== $(date -u +%T) done"
