#!/usr/bin/env bash
# Repeatability with the pipeline on (issue 14): the experts of CATS (default: every category)
# twice, back to back, each run with a fresh database and no reference cache (its own eager
# timings, so that their variance shows), then bench/compare_runs.py over the two databases.
#   OUT=/dir [CATS="Index Loss ..."] [REP_TIMEOUT=265] bash bench/repeatability_gpu.sh
# Leaves $OUT/call3.tgz (both logs and databases, the comparison). All 87 experts take 250-270 s
# a run on the H200 (session 18: run 1 was cut at 260 s after 84), two runs more than one device
# call's 600 s: give each half of the categories a call of its own (CATS), and compare the tasks
# of both calls together. With KBX_DEBUG_TIMING's logs kept, `grep -o "host_loop_ms=[0-9.]*"`
# in rep1.log and rep2.log shows whether the host was slower in one run (host-bound loops).
cd "$(dirname "$0")/.."
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
CATS=${CATS:-$(ls solutions/expert)}
mkdir -p $OUT/sub
for c in $CATS; do cp -r solutions/expert/$c $OUT/sub/; done
echo "experts: $(find $OUT/sub -name '*.py' | wc -l)"
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${REP_TIMEOUT:-265} $KBX eval --method expert \
    --candidates $OUT/sub --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep '^eval' $OUT/rep$k.log | grep -v ' passed ' | head -5
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 4 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -8
cd $OUT && for k in 1 2; do python3 -c "import sqlite3; sqlite3.connect('rep$k.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; done; gzip -f rep1.log rep2.log && tar czf call3.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt && rm -rf sub rep1.log.gz rep2.log.gz rep1.db* rep2.db* repeatability.txt
echo "== $(date -u +%T) done"
