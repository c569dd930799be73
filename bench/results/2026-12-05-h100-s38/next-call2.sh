#!/usr/bin/env bash
# Prepared in session 38: the 184 references cold with KBX_TIMER_KEEP_OUTPUTS=${KEEP:-2} (each
# timed call beside up to KEEP earlier outputs of its batch, the candidates' and the eager
# baselines' timers alike; the setting is in the eager cache's kind, so the baselines are timed
# afresh), then bench/two_states.py on its database. Without it, sessions 37 and 38's cold runs had
# 7 and 12 cases more than 8% apart, the eager side the slower in 18 of 19. About 6 min.
export KBX_TIMER_KEEP_OUTPUTS=${KEEP:-2}
# refs184.sh keeps the database of a run that timed its own eager baselines only when it found
# none kept: without this, an earlier cold run's database on this machine would be the one
# two_states.py reads
rm -f /var/tmp/kbx-eager-s30.db
NAME=cold RUN_TIMEOUT=${RUN_TIMEOUT:-380} VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh |
  grep -v '^  idle\|^  gaps' | tail -40
gunzip -c $OUT/eager.db.gz > /tmp/keep.db && python3 bench/two_states.py /tmp/keep.db | tee $OUT/two-states.txt
