#!/usr/bin/env bash
# session 11, call 3: the quiet_hog adversarial candidate; then the torch.compile workload over a
# longer window with more lanes (JOBS, default 14) and --jobs 1 beside it on Activation/gelu
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) quiet_hog"
KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kq timeout 200 $KBX eval --method quiet_hog \
  --candidates tests/adversarial/timing/quiet_hog --tasks Activation/gelu --device cuda \
  --db $OUT/hog.db --fresh > $OUT/hog.log 2>&1
echo "exit $?"; grep "^eval" $OUT/hog.log; echo "quiet_wanted: $(grep -o quiet_wanted $OUT/hog.log | wc -l)"
$KBX results --db $OUT/hog.db --format csv 2>/dev/null | cut -c1-300
rm -rf /dev/shm/kq
echo "== $(date -u +%T) compile workload"
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/shm-used.txt 2>&1 &
DF=$!
KBX_SLOT_TRACE=$OUT/compile-trace.txt OUT=$OUT TIMEOUT=${COMPILE_TIMEOUT:-400} JOBS=${JOBS:-14} SAMPLE=Activation/gelu bash bench/compile_workload_gpu.sh > $OUT/compile-run.txt 2>&1
kill $DF
grep -v "^eval" $OUT/compile-run.txt | tail -12
echo "/dev/shm used max MB: $(sort -n $OUT/shm-used.txt | tail -1)"
python3 bench/slot_profile.py $OUT/compile_workload/full.log --trace $OUT/compile-trace.txt --top 8 > $OUT/compile-slot.txt 2>&1; head -14 $OUT/compile-slot.txt
cd $OUT && gzip -f hog.log compile_workload/full.log compile-trace.txt && tar czf call3.tgz hog.log.gz compile_workload/full.log.gz compile_workload/walls.txt compile_workload/full.csv compile-trace.txt.gz compile-run.txt compile-slot.txt && rm -rf compile_workload hog.db
echo "== $(date -u +%T) done"
