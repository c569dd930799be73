#!/usr/bin/env bash
# session 15, call 4 (not run: the session's device time ran out; the next session runs it): the timer's settle (it waits for another CUDA context's queued work to drain
# before a case's timed batches): bench/settle_gpu.py against a process that queues 0.6 s of
# matmuls; then the experts of Index, Loss, Normalization and Reduce twice, back to back, fresh
# databases, no reference cache, as call 3 did for all 87 (there masked_select was 8x slower in
# one run: another context's work time-sliced with its timed calls).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
export KBX_TIMER_SETTLE=1  # opt-in until this call has run
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) settle"
python3 bench/settle_gpu.py --hog-ms 600
mkdir -p $OUT/sub
for c in ${CATS:-Index Loss Normalization Reduce}; do cp -r solutions/expert/$c $OUT/sub/; done
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${RUN_TIMEOUT:-140} $KBX eval --method expert \
    --candidates $OUT/sub --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep '^eval' $OUT/rep$k.log | grep -v ' passed ' | head -5
  echo "candidate timed cases: $(grep -o 'settle_s=[0-9.]*' $OUT/rep$k.log | wc -l), settled after a wait: $(grep -o 'settle_s=[0-9.]*' $OUT/rep$k.log | grep -vc 'settle_s=0.00'); reference eager cases that waited: $(grep -o 'eager_settle=[0-9.]*' $OUT/rep$k.log | awk -F= '$2>0.005' | wc -l); gave up: $(grep -o 'eager_contended=1' $OUT/rep$k.log | wc -l)"
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 3 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -6
cd $OUT && for k in 1 2; do python3 -c "import sqlite3; sqlite3.connect('rep$k.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; done; gzip -f rep1.log rep2.log && tar czf call4.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt && rm -rf sub rep1.log.gz rep2.log.gz rep1.db* rep2.db* repeatability.txt
echo "== $(date -u +%T) done"
