#!/usr/bin/env bash
# Session 31, call 3 (about 8 min): the 184 references warm (call 1's eager database, when this
# is still its machine) at the defaults and with KBX_TIMER_WARMUP_MS=3; cold once otherwise.
if [ -s /var/tmp/kbx-eager-s30.db ]; then V="${VARIANTS:-base warmup3}"; T=${RUN_TIMEOUT:-240}; else V=base; T=380; echo "call3: no eager database (a fresh machine): one cold run"; fi
RUN_TIMEOUT=$T VARIANTS="$V" OUT=$OUT bash bench/results/2026-12-05-h200-s30/refs184.sh 2>&1 | tail -70
