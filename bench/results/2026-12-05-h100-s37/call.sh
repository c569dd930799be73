#!/usr/bin/env bash
# Session 37: one device call of refs184.sh (VARIANTS, RUN_TIMEOUT from the caller), its outputs
# packed into $OUT/<name>.tgz (the device returns at most 8 files), the printed summary in
# $OUT/<name>.txt, the eager database (kept by the cold run) in $OUT/eager.db.gz when NAME is
# cold, and every host-bound candidate case of the last variant's run in $OUT/<name>-launch.txt:
# its launch (host) median beside its GPU medians and flags (session 36's launch_gaps check).
# Run it on the device machine only: it edits bench/results/2026-12-04-h200-s27/next-call2.sh in
# place there (the copy of the working tree each call gets), to keep the last run's database.
NAME=${NAME:?} REAL_OUT=$OUT
export OUT=/tmp/o-$NAME
rm -rf $OUT; mkdir -p $OUT
# keep the last variant's database for the case dump: next-call2.sh deletes it at its end
# (a line of its own: refs184.sh's edit of the rm line must still match)
sed -i '/^rm -f \$OUT\/warm.db/i cp $OUT/warm.db /tmp/last-warm.db' bench/results/2026-12-04-h200-s27/next-call2.sh
bash bench/results/2026-12-05-h200-s30/refs184.sh 2>&1 | tee $REAL_OUT/$NAME.txt
[ "$NAME" = cold ] && [ -s /var/tmp/kbx-eager-s30.db ] && gzip -c /var/tmp/kbx-eager-s30.db > $REAL_OUT/eager.db.gz
# (session 38) a warm run's database too, for bench/two_states.py (the candidates' times beside
# the cached eager ones)
[ "$NAME" != cold ] && [ -s /tmp/last-warm.db ] && gzip -c /tmp/last-warm.db > $REAL_OUT/$NAME.db.gz
[ -s /tmp/last-warm.db ] && python3 - /tmp/last-warm.db > $REAL_OUT/$NAME-launch.txt <<'PY'
import sqlite3, statistics, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute(
    "SELECT r.task, r.speedup, c.name, c.cand_ms, c.eager_ms, c.cand_event_ms, c.timing_flags, r.id "
    "FROM case_results c JOIN results r ON r.id = c.result_id "
    "WHERE c.timing_flags LIKE '%host_bound%' OR c.timing_flags LIKE '%launch_gaps%' "
    "OR c.timing_flags LIKE '%waits_on_host%' ORDER BY r.task, c.name").fetchall()
hosts = {}
for rid, name, ms in con.execute("SELECT result_id, case_name, ms FROM samples WHERE who = 'candidate_host'"):
    hosts.setdefault((rid, name), []).append(ms)
print("task case: cand_ms(probe) eager_ms ratio | launch median ms, calls | flags")
for task, speedup, name, cand, eager, ev, flags, rid in rows:
    host = hosts.get((rid, name), [])
    hm = statistics.median(host) if host else float("nan")
    ratio = eager / cand if cand and eager else float("nan")
    print(f"{task} {name}: {cand or 0:.4f} {eager or 0:.4f} {ratio:.3f} | {hm:.4f}, {len(host)} | {flags}")
PY
cd $OUT && tar czf $REAL_OUT/$NAME.tgz . 2>/dev/null
ls -la $REAL_OUT
