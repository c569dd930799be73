#!/usr/bin/env bash
# session 26, call 5 (same machine as call 2, still warm): the 184 references again from the
# same eager timings, now with the reference cache call 2 filled (55 entries).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1; unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
echo "cache entries: $(ls $REF_CACHE 2>/dev/null | wc -l)"
[ -f /tmp/eager.db ] || gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
RUN=warm2 FROM_DB=/tmp/eager.db KEEP_REF_CACHE=1 RUN_TIMEOUT=230 bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps' | tail -30
rm -f $OUT/warm2.db
