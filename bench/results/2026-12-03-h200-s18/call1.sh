#!/usr/bin/env bash
# session 18, call 1: the sandbox and the supervisor's attacks on cuda (bench/sandbox_gpu.sh:
# session 17's non-blocking event_flood and deep_event), then bench/pinned_pool.py with a limit
# per way (session 17's run printed nothing).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
echo "== $(date -u +%T) sandbox on cuda"
SANDBOX_TIMEOUT=260 SUPERVISOR_TIMEOUT=150 OUT=$OUT bash bench/sandbox_gpu.sh 2>&1 | tail -n 40
echo "== $(date -u +%T) pinned pool"
timeout 100 python3 bench/pinned_pool.py --calls 1 --limit 30 2>&1 | tail -n 10
echo "== $(date -u +%T) done"
