#!/usr/bin/env bash
# Session 37: Normalization/spectral_norm_eig with its smaller full cases (about 0.1 s an eager
# call instead of up to 0.87 s), on the GPU: its expert and its reference as a candidate
# (--track any), eager timed in the run; prints the statuses, each case's times and the slot
# time the task held (KBX_DEBUG_TIMING's phases).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
T=Normalization/spectral_norm_eig
mkdir -p /tmp/rc/Normalization && cp tasks/$T/reference.py /tmp/rc/$T.py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for m in expert refs; do
  c=solutions/expert; tr=triton; [ $m = refs ] && c=/tmp/rc && tr=any
  t0=$(date +%s)
  KBX_REF_CACHE=off .carry/bin/kbx eval --method $m --candidates $c --tasks $T --track $tr \
    --device cuda --db /tmp/eig.db > /tmp/$m.log 2>&1
  echo "$m: exit $? wall $(( $(date +%s) - t0 )) s"; grep "^eval" /tmp/$m.log
done
python3 - /tmp/eig.db <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for method, task, status, speedup in con.execute(
        "SELECT c.method, r.task, r.status, r.speedup FROM results r JOIN candidates c ON c.id = r.candidate_id"):
    print(method, task, status, speedup)
for method, name, cand, eager, flags, status in con.execute(
        "SELECT c.method, k.name, k.cand_ms, k.eager_ms, k.timing_flags, k.status FROM case_results k "
        "JOIN results r ON r.id = k.result_id JOIN candidates c ON c.id = r.candidate_id "
        "WHERE k.eager_ms > 0 ORDER BY c.method, k.name"):
    print(f"  {method} {name}: cand {cand} ms, eager {eager} ms, {status} {flags}")
PY
gzip -c /tmp/expert.log > $OUT/expert.log.gz; gzip -c /tmp/refs.log > $OUT/refs.log.gz
