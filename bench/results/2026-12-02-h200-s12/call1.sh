#!/usr/bin/env bash
# session 12, call 1: the 184 references as candidates, twice into one database (issue 14's
# 3-minute target): cold (nothing cached), then with this machine's eager timings cached from
# the first run; each run with an empty reference cache of its own. The references time only
# their eager loops under the slot, candidates hand it back after theirs, every timed loop quiet.
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,)
for k in cold warm; do
  echo "== $(date -u +%T) references as candidates, all tasks: $k"
  mkdir -p $OUT/$k
  ( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/$k/shm-used.txt 2>&1 &
  DF=$!
  export KBX_SLOT_TRACE=$OUT/$k/slot-trace.txt
  limit=$([ $k = cold ] && echo ${COLD_TIMEOUT:-330} || echo ${WARM_TIMEOUT:-230})
  OUT=$OUT/$k DB=$OUT/profile.db PROFILE_TIMEOUT=$limit TASKS=$TASKS bash bench/pipeline_profile_gpu.sh > $OUT/$k/profile-run.txt 2>&1
  unset KBX_SLOT_TRACE
  kill $DF
  cat $OUT/$k/profile-run.txt
  L=$OUT/$k/profile/profile.log
  echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $OUT/$k/shm-used.txt | tail -1)"
  echo "eager from the cache: $(grep -c 'eager timings from this machine' $L) tasks; quiet candidate loops $(grep -o 'quiet_wanted' $L | wc -l)"
  grep "^eval" $L | grep -v " passed " | head
  tail -n 3 $L
  python3 bench/slot_profile.py $L --top 25 --trace $OUT/$k/slot-trace.txt > $OUT/$k/slot_profile.txt 2>&1; head -40 $OUT/$k/slot_profile.txt
  rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
  gzip -f $L $OUT/$k/slot-trace.txt
done
cd $OUT && tar czf call1.tgz cold/profile/profile.log.gz warm/profile/profile.log.gz cold/slot-trace.txt.gz warm/slot-trace.txt.gz */slot_profile.txt */shm-used.txt */profile-run.txt profile.db && rm -rf cold warm profile.db
echo "== $(date -u +%T) done"
