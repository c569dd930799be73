#!/usr/bin/env bash
# session 11, call 3: the slot holder pinned to a GPU-local CPU; with KBX_QUIET_TIMING=all, masked_select (and a few more
# experts) twice back to back; the quiet_hog adversarial candidate; the torch.compile workload over
# a longer window with more lanes (JOBS, default 14) and --jobs 1 beside it on Activation/gelu
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) topology"
lscpu | grep -iE "^cpu\(s\)|numa|model name|socket" | tee $OUT/topology.txt
for d in /proc/driver/nvidia/gpus/*; do b=$(basename $d | tr A-Z a-z); echo "$b local_cpulist $(cat /sys/bus/pci/devices/$b/local_cpulist)"; done | tee -a $OUT/topology.txt
echo "== $(date -u +%T) experts of Index, Loss and airy_ai, twice"
TASKS=$(ls solutions/expert/Index/*.py solutions/expert/Loss/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,),Math/airy_ai
for k in 1 2; do
  t0=$(date +%s)
  KBX_QUIET_TIMING=all KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${REP_TIMEOUT:-80} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep -E "slot holders run on|KBX_QUIET_TIMING" $OUT/rep$k.log; echo "  quiet: candidate loops $(grep -o quiet_wanted $OUT/rep$k.log | wc -l), reference cases $(grep -c eager_quiet=1 $OUT/rep$k.log)"
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 3 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -6
echo "== $(date -u +%T) quiet_hog"
KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kq timeout ${HOG_TIMEOUT:-90} $KBX eval --method quiet_hog \
  --candidates tests/adversarial/timing/quiet_hog --tasks Activation/gelu --device cuda \
  --db $OUT/hog.db --fresh > $OUT/hog.log 2>&1
echo "exit $?"; grep "^eval" $OUT/hog.log; echo "quiet_wanted: $(grep -o quiet_wanted $OUT/hog.log | wc -l)"
$KBX results --db $OUT/hog.db --format csv 2>/dev/null | cut -c1-200
rm -rf /dev/shm/kq
if [ -z "${SKIP_COMPILE:-}" ]; then
echo "== $(date -u +%T) compile workload"
KBX_SLOT_TRACE=$OUT/compile-trace.txt OUT=$OUT TIMEOUT=${COMPILE_TIMEOUT:-200} JOBS=${JOBS:-14} SAMPLE=Activation/gelu bash bench/compile_workload_gpu.sh > $OUT/compile-run.txt 2>&1
grep -v "^eval" $OUT/compile-run.txt | tail -12
python3 bench/slot_profile.py $OUT/compile_workload/full.log --trace $OUT/compile-trace.txt --top 8 > $OUT/compile-slot.txt 2>&1; head -8 $OUT/compile-slot.txt
cd $OUT && gzip -f compile_workload/full.log compile-trace.txt && tar czf compile.tgz compile_workload/full.log.gz compile_workload/walls.txt compile_workload/full.csv compile-trace.txt.gz compile-run.txt compile-slot.txt && rm -rf compile_workload
fi
cd $OUT && gzip -f rep1.log rep2.log hog.log && tar czf call3.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt topology.txt hog.log.gz && rm -rf hog.db rep1.db rep2.db
echo "== $(date -u +%T) done"
