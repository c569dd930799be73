#!/usr/bin/env bash
# session 12, call 3: the slot CPU kept for the holders (kbx and every other job off it); the
# experts of Index and Loss, airy_ai and bessel_j1 twice back to back (defaults: every timed
# loop quiet); then the 184 references as candidates with this machine's eager timings cached
# (the database of call 1's cold run, 141 tasks timed there; same worker code, same seed)
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) slot tests"
timeout 60 .carry/bin/kbx_tests --gtest_filter='GpuSlot*' > $OUT/slot-tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED \]" $OUT/slot-tests.txt
echo "== $(date -u +%T) experts of Index, Loss, airy_ai, bessel_j1, twice"
TASKS=$(ls solutions/expert/Index/*.py solutions/expert/Loss/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,),Math/airy_ai,Math/bessel_j1
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${REP_TIMEOUT:-75} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep "slot holders run" $OUT/rep$k.log
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 3 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -6
echo "== $(date -u +%T) references as candidates, all tasks, eager timings cached"
cp .carry/db/cold.db $OUT/warm.db
mkdir -p $OUT/warm
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/warm/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/warm/slot-trace.txt
WOUT=$OUT/warm
OUT=$WOUT DB=$WOUT/../warm.db PROFILE_TIMEOUT=${WARM_TIMEOUT:-280} TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,) bash bench/pipeline_profile_gpu.sh > $WOUT/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $WOUT/profile-run.txt
L=$WOUT/profile/profile.log
echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $WOUT/shm-used.txt | tail -1)"
echo "eager from the cache: $(grep -c 'eager timings from this machine' $L) tasks; quiet candidate loops $(grep -o 'quiet_wanted' $L | wc -l)"
grep "^eval" $L | grep -v " passed " | head
python3 bench/slot_profile.py $L --top 15 --trace $WOUT/slot-trace.txt > $WOUT/slot_profile.txt 2>&1; head -30 $WOUT/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
gzip -f $L $WOUT/slot-trace.txt
cd $OUT && gzip -f rep1.log rep2.log && tar czf call3.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt slot-tests.txt warm/profile/profile.log.gz warm/slot-trace.txt.gz warm/slot_profile.txt warm/shm-used.txt warm/profile-run.txt && rm -rf rep1.db rep2.db warm warm.db*
echo "== $(date -u +%T) done"
