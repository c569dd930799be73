#!/usr/bin/env bash
# Prepared in session 43 for the next GPU session, on an H200 if one is lent (name nvidia-h200;
# carry .carry/; timeout_s 570): issue 14's first acceptance point with a reference worker's
# finished task handed to the lanes at once (f31fd22). Session 42's STEP=refs call: the 184
# references cold (which also warms the machine: a fresh machine's first run is about 20% slower,
# session 43 call 1), then warm at the defaults; one tarball and summary.txt. Then the reference
# workers' lives in the warm run (hello, done, exit, frozen: the debug line since session 43).
# Compare: H200 warm 185.9 s (session 42, without the hand-on); H100 warm 166.4 s (session 43).
STEP=refs bash bench/results/2026-12-06-h100-s42/next-calls.sh
LOG=$(ls /tmp/x-warm/warm/profile/profile.log.gz 2>/dev/null | head -1)
[ -n "$LOG" ] && zcat $LOG | python3 -c "
import re, sys
rows = [tuple(map(float, m.groups())) for m in (re.search(r'hello after ([\d.-]+) s, done at ([\d.-]+) s, exited at ([\d.-]+) s, frozen ([\d.-]+) s', l) for l in sys.stdin) if m]
print(f'warm: {len(rows)} reference workers: hello {sum(r[0] for r in rows):.1f} s, done {sum(r[1] for r in rows):.1f} s, done->exit {sum(r[2] - r[1] for r in rows):.1f} s, frozen {sum(r[3] for r in rows):.1f} s in all')
" | tee -a $OUT/summary.txt
