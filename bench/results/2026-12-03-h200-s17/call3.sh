#!/usr/bin/env bash
# session 17, call 3: the supervisor attacks on cuda (attacks.py; call 2's run of them hit the
# call's limit: two attackers blocked on pipes nobody drains), then all 87 experts twice, back to
# back, fresh databases, no reference cache (as session 15's call 3), settle off (call 1: the
# settle's burst did not see another context's queued matmuls).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
S=bench/results/2026-12-03-h200-s17
echo "== $(date -u +%T) supervisor attacks on cuda"
python3 $S/attacks.py "$OUT/attacks" 2>&1 | tail -n 20
rm -rf $OUT/attacks/attacks $OUT/attacks/hang $OUT/attacks/blocking /dev/shm/kbx-attacks-*
REP_TIMEOUT=${REP_TIMEOUT:-235} bash bench/results/2026-12-03-h200-s15/call3.sh
