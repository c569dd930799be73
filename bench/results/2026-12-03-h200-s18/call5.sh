#!/usr/bin/env bash
# session 18, call 5: the supervisor's attacks on cuda again (test_supervisor.py's attacks in one
# run, each beside two honest experts), with the fix for call 1's failure: deep_event was
# import_error, not crash; now a worker's first malformed event ends it, nothing after it is read,
# and a protocol error decides the status first (malformed_then_error shows it on the CPU).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export KBX_BIN=$PWD/.carry/bin/kbx
mkdir -p $OUT/sup
KBX_ADVERSARIAL_DEVICE=cuda timeout --signal=KILL 150 python3 -m pytest -q -p no:cacheprovider \
  --basetemp=$OUT/sup/t -k "attacks_in_one_run" tests/python/test_supervisor.py 2>&1 | tail -n 15
for db in $OUT/sup/t/*/k.db; do $KBX_BIN results --db $db 2>&1 | head -n 30; done
rm -rf $OUT/sup/t
echo "== $(date -u +%T) done"
