#!/usr/bin/env bash
# session 13, call 4: smoke of kbx's comparisons waiting out each quiet timed loop
# (QuietRoom::wait_while_hushed): the experts of Index and Loss twice back to back (as session
# 12's call 3), fresh databases, no reference cache.
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
timeout 60 .carry/bin/kbx_tests --gtest_filter='QuietRoom*:Compare.*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED \]"
TASKS=$(ls solutions/expert/Index/*.py solutions/expert/Loss/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,)
for k in 1 2; do
  t0=$(date +%s)
  KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${REP_TIMEOUT:-70} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 2 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -4
cd $OUT && gzip -f rep1.log rep2.log && tar czf call4.tgz rep1.log.gz rep2.log.gz repeatability.txt && rm -rf rep*.log.gz rep*.db* repeatability.txt
