#!/usr/bin/env bash
# session 10, call 2: teardown interference (kept this time), the 184 references as candidates
# after the reference-side changes (6 workers, first chunk of one, parallel file writes) and the
# candidate's end at "done", then the experts twice back to back (repeatability, no ref cache)
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) teardown interference"
timeout 60 python3 bench/teardown_interference.py --mode idle --children 8 > $OUT/teardown.txt 2>&1
timeout 60 python3 bench/teardown_interference.py --mode busy --children 4 --spin-s 2 >> $OUT/teardown.txt 2>&1
grep -v Warning $OUT/teardown.txt
echo "== $(date -u +%T) references as candidates, all tasks"
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/slot-trace.txt
OUT=$OUT PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-260} TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,) bash bench/pipeline_profile_gpu.sh > $OUT/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $OUT/profile-run.txt
echo "evaluated: $(grep -c '^eval' $OUT/profile/profile.log); /dev/shm used max MB: $(sort -n $OUT/shm-used.txt | tail -1)"
grep "^eval" $OUT/profile/profile.log | grep -v " passed " | head
grep -i "was cut\|truncat" $OUT/profile/profile.log | head -5
python3 bench/slot_profile.py $OUT/profile/profile.log --top 20 --trace $OUT/slot-trace.txt > $OUT/slot_profile.txt 2>&1; head -45 $OUT/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
echo "== $(date -u +%T) experts twice"
TASKS=$(ls solutions/expert/*/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,)
for k in 1 2; do
  t0=$(date +%s)
  KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${RUN_TIMEOUT:-120} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 6 $OUT/repeatability.txt
cd $OUT && gzip -f profile/profile.log slot-trace.txt rep1.log rep2.log && tar czf call2.tgz profile/profile.log.gz slot-trace.txt.gz slot_profile.txt rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt teardown.txt shm-used.txt && rm -rf profile rep1.db rep2.db
echo "== $(date -u +%T) done"
