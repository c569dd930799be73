#!/usr/bin/env bash
# Session 31: why call 1's jobs ended harness_error ("kbx failed on it") and some references
# reference_error: three tasks, their references as candidates, with and without the compiler
# preload, the results' details printed.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_REF_CACHE=off
T=Activation/relu,Fusion/fused_sum_std,Math/add
rm -rf /tmp/dc && mkdir -p /tmp/dc/Activation /tmp/dc/Fusion /tmp/dc/Math
for t in ${T//,/ }; do cp tasks/$t/reference.py /tmp/dc/$t.py; done
for p in 1 0; do
  echo "==== KBX_PRELOAD_COMPILER=$p"
  KBX_PRELOAD_COMPILER=$p KBX_DEBUG_TIMING=1 KBX_WORK=/dev/shm/kbx-diag timeout 150 .carry/bin/kbx eval --method d$p \
    --candidates /tmp/dc --tasks $T --track any --device cuda --db $OUT/diag$p.db --fresh --seed 7 > $OUT/diag$p.log 2>&1
  echo "exit $?"
  grep -v "(edge)\|(small)\|(full)\|(fresh)" $OUT/diag$p.log | grep -v "timeline" | head -30 | cut -c1-300
  .carry/bin/kbx results --db $OUT/diag$p.db --format json | python3 -c "
import json,sys
for r in json.load(sys.stdin)['results']: print(r['task'], r['status'], (r.get('detail') or '')[:1500])"
done
