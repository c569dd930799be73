#!/usr/bin/env bash
# Session 31, last device minutes (about 4 min): the references of MatrixMultiply, Activation and
# Reduce as their own candidates, cold, at the new defaults (candidates' settle on, preload off):
# all must pass, no job may run again alone for contention, self-speedups near 1.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_REF_CACHE=off
nvidia-smi --query-gpu=name --format=csv,noheader
T=$(ls -d tasks/MatrixMultiply/* tasks/Activation/* tasks/Reduce/* | sed 's|tasks/||' | paste -sd,)
rm -rf /tmp/c; for t in ${T//,/ }; do mkdir -p /tmp/c/$(dirname $t); cp tasks/$t/reference.py /tmp/c/$t.py; done
t0=$(date +%s)
KBX_WORK=/dev/shm/kbx-w timeout --signal=INT ${RUN_TIMEOUT:-200} .carry/bin/kbx eval --method refs --candidates /tmp/c \
  --tasks $T --track any --device cuda --db $OUT/refs.db --fresh --seed 7 > $OUT/refs.log 2>&1
echo "exit $? in $(( $(date +%s) - t0 )) s; $(grep -c '^eval' $OUT/refs.log) of $(echo $T | tr ',' '\n' | wc -l) evaluated"
grep "^eval" $OUT/refs.log | grep -v " passed " | head
grep "again alone\|computed again" $OUT/refs.log | head
.carry/bin/kbx results --db $OUT/refs.db --format csv | python3 bench/self_speedups.py | tail -6
python3 - $OUT/refs.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("cases flagged contended:", c.execute("select count(*) from case_results where timing_flags like '%contended%'").fetchone()[0],
      "of", c.execute("select count(*) from case_results where cand_ms is not null").fetchone()[0], "timed")
print("attempts:", c.execute("select outcome, count(*) from attempts group by 1").fetchall())
PY
gzip -f $OUT/refs.log
