#!/usr/bin/env bash
# Prepared in session 26 for the next GPU session (not yet run): (1) bench/spawn_cost.py with
# CUDA's start in 1-16 forked children at once: in call 5 a job took a median 2.95 s from its
# source check to its import (CUDA's start and the candidate's import, 12 lanes side by side)
# and 1.25 s to its hello; does CUDA's start serialize across processes? (2) the 184 references
# warm at the defaults, with the binary of fmt compiled once (41132bf and later: no change in
# behaviour expected; calls 2-5 of session 26 ran the build before it).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
python3 bench/spawn_cost.py --concurrent 1,2,4,8,12,16 2>&1 | tee $OUT/spawn_cost.txt
unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
RUN=warm FROM_DB=/tmp/eager.db RUN_TIMEOUT=${RUN_TIMEOUT:-240} bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps' | tail -32
rm -f $OUT/warm.db
