#!/usr/bin/env bash
# session 20, call 4 (the last 700 s of device time: one call): the 184 references as
# candidates cold, then warm with that database, JOBS=12 REF_WORKERS=8 LIVE_TASKS=20 as calls 1-2.
# Changed since call 2 (warm 225.5 s, against 195.6 s in session 19): the timer asks for the
# quiet host after its warm-up again (asked before it, the other jobs stayed frozen 18 s more
# and the references' tasks took 1015 s against 711 s); a call of scalars only keeps its
# (empty) inputs file (Random/logspace's runtime_error in calls 1-2).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} LIVE_TASKS=${LIVE_TASKS:-20}
RUN=cold RUN_TIMEOUT=${COLD_TIMEOUT:-320} bash bench/results/2026-12-03-h200-s17/run184.sh | grep -v '^  idle\|^  gaps'
cp $OUT/cold.db /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db RUN_TIMEOUT=${WARM_TIMEOUT:-235} bash bench/results/2026-12-03-h200-s17/run184.sh
