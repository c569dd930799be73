#!/usr/bin/env bash
# session 15, call 3 (same as session 13 call 3): repeatability with the pipeline on (issue 14): all 87 experts twice, back
# to back, with the defaults (every timed loop quiet, the slot CPU kept for holders, references
# forked warm, the room gate), each run with a fresh database and no reference cache (its own
# eager timings, so that their variance shows).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${REP_TIMEOUT:-265} $KBX eval --method expert \
    --candidates solutions/expert --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  grep '^eval' $OUT/rep$k.log | grep -v ' passed ' | head -5
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 4 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -8
cd $OUT && for k in 1 2; do python3 -c "import sqlite3; sqlite3.connect('rep$k.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; done; gzip -f rep1.log rep2.log && tar czf call3.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt && rm -rf rep1.log.gz rep2.log.gz rep1.db* rep2.db* repeatability.txt
echo "== $(date -u +%T) done"
