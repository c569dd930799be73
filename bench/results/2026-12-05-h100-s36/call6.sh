#!/usr/bin/env bash
# Session 36, call 6: the timer no longer holds a host-waiting call's batch behind a spin. The
# Index experts once (masked_select waits on the host), then each host-waiting case's host time
# of a batch's first call against the others' (call 3: 31 ms against 0.7 ms, the spin's wait),
# and the holds_s that timings now report.
#   OUT=/dir bash bench/results/2026-12-05-h100-s36/call6.sh
cd "$(dirname "$0")/../../.."
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
mkdir -p $OUT/sub && cp -r solutions/expert/Index $OUT/sub/
t0=$(date +%s)
KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx6 timeout --signal=INT ${RUN_TIMEOUT:-120} \
  .carry/bin/kbx eval --method expert --candidates $OUT/sub --device cuda --db $OUT/idx.db --fresh > $OUT/idx.log 2>&1
echo "exit $? wall $(( $(date +%s) - t0 )) s"; grep '^eval' $OUT/idx.log
echo "waits_on_host cases: candidate host ms of a batch's first call / the others (samples), cand_ms, eager_ms"
sqlite3 $OUT/idx.db "select r.task || ':' || c.name, round(avg(case when s.idx % 10 = 0 then s.ms end), 2),
    round(avg(case when s.idx % 10 <> 0 then s.ms end), 2), count(*), round(c.cand_ms, 4), round(c.eager_ms, 4)
  from case_results c join results r on r.id = c.result_id
  join samples s on s.result_id = c.result_id and s.case_name = c.name and s.who = 'candidate_host'
  where c.timing_flags like '%waits_on_host%' group by 1"
grep -o "timing [a-z0-9_]* .*holds_s=[0-9.]*" $OUT/idx.log | sed 's/ setup_s.*batches_s=/ batches_s=/' | head -30
python3 bench/slot_profile.py $OUT/idx.log 2>/dev/null | grep "of .* timings"
rm -rf /dev/shm/kx6 $OUT/sub; python3 -c "import sqlite3; sqlite3.connect('$OUT/idx.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"; gzip -f $OUT/idx.log
