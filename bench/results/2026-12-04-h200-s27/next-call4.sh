#!/usr/bin/env bash
# Prepared in session 27 for the next GPU session: the A/B of next-call3.sh, the compile
# workload with the slot taken before the call (KBX_SLOT_AT=call, the default), 400 s, the rest
# alike (session 26's next-call1.sh at 400 s).
TIMEOUT=${TIMEOUT:-400} KBX_SLOT_AT=call bash bench/results/2026-12-04-h200-s26/next-call1.sh
