#!/usr/bin/env bash
# Prepared in session 40 (about 5 min, any GPU; timeout_s 400, carry .carry/): the 184 references
# cold under one refs184.sh variant (VARIANT, default redraw: KBX_EAGER_REDRAW=1, a short eager
# timing drawn a second time on inputs made again after the allocator's kept segments went back,
# kept when the first was more than 8% slower), then bench/two_states.py on its database and the
# redraws it made. Cold base runs on an H100: 7, 12 and 8 cases over 8% apart, the eager side the
# slower in nearly all. A remedy should bring that near the candidate side's own count (0-1).
# Writes $OUT/cold.txt, $OUT/cold.tgz, $OUT/eager.db.gz (call.sh) and $OUT/two-states.txt.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -f /var/tmp/kbx-eager-s30.db  # else call.sh would return an earlier run's database
NAME=cold RUN_TIMEOUT=${RUN_TIMEOUT:-330} VARIANTS=${VARIANT:-redraw} \
  bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 | grep -v '^  idle\|^  gaps' | tail -12
gunzip -c $OUT/eager.db.gz > /tmp/cold.db && python3 bench/two_states.py /tmp/cold.db | tee $OUT/two-states.txt
# the redraws, from the run's profile log (KBX_DEBUG_TIMING prints each reference case's phases):
# how many short eager timings were drawn twice, and how many the second replaced
mkdir -p /tmp/cv && tar xzf $OUT/cold.tgz -C /tmp/cv 2>/dev/null
for t in /tmp/cv/*/call1-warm.tgz; do tar xzf "$t" -C /tmp/cv; done
LOG=$(ls /tmp/cv/warm/profile/profile.log.gz 2>/dev/null | head -1)
[ -n "$LOG" ] && echo "eager timings drawn twice: $(zgrep -c 'eager_redraw_ms=' $LOG); the second kept: $(zgrep -c 'eager_redrawn=1.000' $LOG)" |
  tee -a $OUT/two-states.txt
