#!/usr/bin/env bash
# session 10, call 3: the experts twice back to back (no reference cache: both runs whole) with
# the slot holder's CPU priority; then the torch.compile workload, short, with the slot trace
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) experts twice"
TASKS=$(ls solutions/expert/*/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,)
for k in 1 2; do
  t0=$(date +%s)
  KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${RUN_TIMEOUT:-130} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 3 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -5
echo "== $(date -u +%T) compile workload"
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/shm-used.txt 2>&1 &
DF=$!
KBX_SLOT_TRACE=$OUT/compile-trace.txt OUT=$OUT TIMEOUT=${COMPILE_TIMEOUT:-150} SAMPLE=Activation/gelu bash bench/compile_workload_gpu.sh > $OUT/compile-run.txt 2>&1
kill $DF
grep -v "^eval" $OUT/compile-run.txt | tail -12
echo "/dev/shm used max MB: $(sort -n $OUT/shm-used.txt | tail -1)"
python3 bench/slot_profile.py $OUT/compile_workload/full.log --trace $OUT/compile-trace.txt --top 8 2>&1 | head -14
cd $OUT && gzip -f rep1.log rep2.log compile_workload/full.log compile-trace.txt && tar czf call3.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt compile_workload/full.log.gz compile_workload/walls.txt compile_workload/full.csv compile-trace.txt.gz compile-run.txt && rm -rf rep1.db rep2.db compile_workload
echo "== $(date -u +%T) done"
