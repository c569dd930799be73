#!/usr/bin/env bash
# session 12, call 2: the slot tests (the candidate's one hand-back included); the slot_handback
# adversarial candidate; the experts (all 87) twice back to back with the defaults (every timed
# loop quiet, the holder pinned, references time only their eager loops under the slot,
# candidates hand it back after theirs), no reference cache and fresh databases (both runs whole)
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) slot tests"
timeout 60 .carry/bin/kbx_tests --gtest_filter='GpuSlot*:TimedAfter*:Quiet*' > $OUT/slot-tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED \]" $OUT/slot-tests.txt
echo "== $(date -u +%T) slot_handback"
KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kh timeout 60 $KBX eval --method slot_handback \
  --candidates tests/adversarial/timing/slot_handback --tasks Activation/gelu --device cuda \
  --db $OUT/handback.db --fresh > $OUT/handback.log 2>&1
echo "exit $?"; grep "^eval" $OUT/handback.log; grep -o "timed its calls after[^\"]*" $OUT/handback.log | head -2
rm -rf /dev/shm/kh
echo "== $(date -u +%T) experts twice"
TASKS=$(ls solutions/expert/*/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,)
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${RUN_TIMEOUT:-230} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep '^eval' $OUT/rep$k.log | grep -v ' passed ' | head -5
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 6 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -6
cd $OUT && gzip -f rep1.log rep2.log handback.log && tar czf call2.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt slot-tests.txt handback.log.gz && rm -rf rep1.db rep2.db handback.db*
echo "== $(date -u +%T) done"
