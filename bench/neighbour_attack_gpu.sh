#!/usr/bin/env bash
# A neighbour's GPU queue against the eager baselines (session 30): the references of the
# MatrixMultiply tasks and Activation/relu as candidates, eager baselines timed in the run (fresh
# database, no reference cache), twice: clean, then with relu's candidate replaced by
# tests/adversarial/sandbox/neighbour_queue (40 s of matmuls queued at import, outside the slot).
# Prints each task's eager median per full case in both runs and their ratio, then the same for
# the candidates' own medians (the victims' timed calls): with kbx's defenses (the timers' settle;
# a contended baseline computed again alone, a job with a contended case run again alone, since
# session 31) every ratio stays near 1, the attack run says "computed again alone" for the
# references it met, and its attempts table has "contended_beside" for the jobs it met.
#   OUT=/dir [VICTIMS=Cat/a,Cat/b] [RUN_TIMEOUT=150] bash bench/neighbour_attack_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/neighbour-attack
export KBX_WORK=/dev/shm/kbx-work-neighbour KBX_REF_CACHE=off PYTHONUNBUFFERED=1
mkdir -p "$OUT"
VICTIMS=${VICTIMS:-$(ls -d tasks/MatrixMultiply/* | sed 's|tasks/||' | paste -sd,)}
TASKS=Activation/relu,$VICTIMS
for run in clean attack; do
  rm -rf "$OUT/$run-cands"
  for task in ${TASKS//,/ }; do
    mkdir -p "$OUT/$run-cands/$(dirname "$task")"
    cp "tasks/$task/reference.py" "$OUT/$run-cands/$task.py"
  done
  [ $run = attack ] && cp tests/adversarial/sandbox/neighbour_queue/Activation/relu.py "$OUT/$run-cands/Activation/relu.py"
  t0=$(date +%s)
  timeout --signal=INT "${RUN_TIMEOUT:-150}" "$KBX" eval --method $run --candidates "$OUT/$run-cands" \
    --tasks "$TASKS" --track any --device cuda --db "$OUT/$run.db" --fresh --seed 7 > "$OUT/$run.log" 2>&1
  echo "== $run: exit $? in $(( $(date +%s) - t0 )) s; $(grep -c '^eval' "$OUT/$run.log") evaluated"
  grep "^eval\|again alone\|GpuContended" "$OUT/$run.log" | cut -c1-160
done
python3 - "$OUT/clean.db" "$OUT/attack.db" <<'PY'
import json, sqlite3, statistics, sys
def eager(path):
    c = sqlite3.connect(path)
    out = {}
    for task, kind, case, samples in c.execute("select task, kind, case_name, samples from baselines where kind like 'eager%'"):
        s = json.loads(samples)
        s = s.get("samples", s) if isinstance(s, dict) else s
        if s:
            out[(task, case)] = statistics.median(s)
    return out
a, b = eager(sys.argv[1]), eager(sys.argv[2])
ratios = []
for k in sorted(set(a) & set(b)):
    r = b[k] / a[k]
    ratios.append(r)
    print(f"  {k[0]:40s} {k[1]:28s} clean {a[k]:9.4f} ms  attack {b[k]:9.4f} ms  x{r:.3f}")
if ratios:
    print(f"eager attack/clean: median x{statistics.median(ratios):.3f}, max x{max(ratios):.3f} over {len(ratios)} cases")
def candidate(path):
    c = sqlite3.connect(path)
    q = ("select r.task, cr.name, cr.cand_ms, cr.timing_flags from case_results cr "
         "join results r on r.id = cr.result_id where cr.cand_ms is not null")
    return {(t, n): (ms, flags or "") for t, n, ms, flags in c.execute(q)}
a, b = candidate(sys.argv[1]), candidate(sys.argv[2])
ratios = []
for k in sorted(set(a) & set(b)):
    r = b[k][0] / a[k][0]
    ratios.append(r)
    print(f"  {k[0]:40s} {k[1]:28s} clean {a[k][0]:9.4f} ms  attack {b[k][0]:9.4f} ms  x{r:.3f} {b[k][1]}")
if ratios:
    print(f"candidates attack/clean: median x{statistics.median(ratios):.3f}, max x{max(ratios):.3f} over {len(ratios)} cases")
c = sqlite3.connect(sys.argv[2])
outcomes = c.execute("select c.task, a.outcome from attempts a join candidates c on c.id = a.candidate_id "
                     "order by a.id").fetchall()
print("attack run's attempts run again alone:", [t for t, o in outcomes if o == "contended_beside"] or "none")
PY
rm -rf /dev/shm/kbx-work-neighbour
