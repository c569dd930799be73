#!/usr/bin/env bash
# Session 46, on the GPU: the host's facts in a run's environment (the first reference worker's
# hello on CUDA) and bench/compare_runs.py reading them. Four experts twice.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
for n in 1 2; do
  TIMEFORMAT="run $n: %R s"
  time .carry/bin/kbx eval --method expert --fresh \
    --candidates solutions/expert --tasks Activation/relu,Activation/gelu,Math/add,Loss/mse_loss --device cuda --db $OUT/act$n.db \
    --work /tmp/w$n 2>&1 | grep -cE "^eval .* passed" | sed "s/^/passed: /"
done
python3 - $OUT/act1.db $OUT/act2.db <<'PY'
import json, sqlite3, sys
for p in sys.argv[1:]:
    env = json.loads(sqlite3.connect(p).execute("SELECT environment FROM runs").fetchone()[0])
    print(p, {k: env.get(k) for k in ("gpu", "cpu", "cpus", "host_loop_ms", "fingerprint", "kbx_revision")})
PY
python3 bench/compare_runs.py $OUT/act1.db $OUT/act2.db | tail -5
