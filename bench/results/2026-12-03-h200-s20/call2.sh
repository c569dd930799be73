#!/usr/bin/env bash
# session 20, call 2: the 184 references as candidates with call 1's database (eager timings
# cached), same settings (session 19's warm run: 195.6 s, target 180 s); then
# bench/timing_hardening_gpu.sh (every attack its status, the experts passing, overhead median).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8} LIVE_TASKS=${LIVE_TASKS:-20}
df -h /dev/shm / | tail -n 2; free -g | head -2
zcat .carry/cold.db.gz > /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db RUN_TIMEOUT=${RUN_TIMEOUT:-260} bash bench/results/2026-12-03-h200-s17/run184.sh
export KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
echo "== $(date -u +%T) timing hardening"
bash bench/timing_hardening_gpu.sh > $OUT/hardening.txt 2>&1; echo "exit $?"; tail -n 40 $OUT/hardening.txt
tar czf $OUT/call2-hardening.tgz -C $OUT timing-hardening --exclude='*.db-wal' 2>/dev/null; rm -rf $OUT/timing-hardening
echo "== $(date -u +%T) done"
