#!/usr/bin/env bash
# session 15, call 1: the 184 references as candidates, cold (a fresh database: the worker hash
# changed, so no eager timing is cached), with the room gate counting what chunks in flight have
# still to write and the references' warm parent importing beside the hello worker; no reference
# cache (one run cannot hit its own, and on /dev/shm it held 16 GB of the gate's room). The
# database it leaves (every task's eager timings and reference footprint) is call 2's.
# Since session 23: REF_CACHE names a reference cache (default off, as session 15 ran).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,)
k=${RUN:-cold}
[ -n "${FROM_DB:-}" ] && cp "$FROM_DB" $OUT/profile.db
echo "== $(date -u +%T) references as candidates, all tasks: $k"
mkdir -p $OUT/$k
( while sleep 3; do echo "$(df -m --output=used /dev/shm | tail -1) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)"; done ) > $OUT/$k/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/$k/slot-trace.txt KBX_REF_CACHE=${REF_CACHE:-off}
D=$OUT/$k
OUT=$D DB=$D/../profile.db PROFILE_TIMEOUT=${RUN_TIMEOUT:-540} TASKS=$TASKS bash bench/pipeline_profile_gpu.sh > $D/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $D/profile-run.txt
L=$D/profile/profile.log
echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $D/shm-used.txt | tail -1 | cut -d' ' -f1); MemAvailable min MB: $(awk '{print $2}' $D/shm-used.txt | sort -n | head -1)"
echo "eager from the cache: $(grep -c 'eager timings from this machine' $L) tasks"
echo "references from the cache: $(grep -c "reference .*: from the cache" $L) tasks"
grep "^eval" $L | grep -v " passed " | head
tail -n 2 $L
python3 bench/slot_profile.py $L --top 10 --trace $D/slot-trace.txt > $D/slot_profile.txt 2>&1; head -40 $D/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile
gzip -f $L $D/slot-trace.txt
cd $OUT && python3 -c "
import sqlite3; c = sqlite3.connect('profile.db'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
print('footprints remembered:', c.execute(\"select count(*) from baselines where kind like 'reference_bytes%'\").fetchone())
print('tasks with eager cached:', c.execute(\"select count(distinct task) from baselines where kind like 'eager/%'\").fetchone())"
tar czf call1-$k.tgz $k/profile/profile.log.gz $k/slot-trace.txt.gz $k/slot_profile.txt $k/shm-used.txt $k/profile-run.txt && cp profile.db $k.db && rm -rf $k profile.db*
echo "== $(date -u +%T) done"
