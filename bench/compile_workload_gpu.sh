#!/usr/bin/env bash
# Issue 14's realistic workload on the GPU: every task's reference compiled by torch.compile
# (Inductor: each candidate runs Triton kernels Inductor generated, compiled cold in its own
# process), judged by kbx; also the non-LLM torch.compile baseline method.
#   1. bench/make_compile_candidates.py writes the candidate set (backend inductor) into $OUT;
#   2. kbx eval over every task, default --jobs (the pipeline): wall time, passed/total, the
#      count of each status, and how many jobs had their Inductor launches counted;
#   3. kbx eval with --jobs 1 over SAMPLE (default: 12 tasks spread over the categories).
# Wall time per kernel for both runs goes to $OUT/compile_workload/walls.txt.
# Nothing compiled persists from one candidate (or run) to the next: kbx gives every candidate's
# worker a new job folder as HOME and TRITON_CACHE_DIR and a private /tmp as TMPDIR, where
# Inductor keeps its cache (/tmp/torchinductor_kbx); the worker's environment is scrubbed, so a
# TRITON_CACHE_DIR or TORCHINDUCTOR_* set outside does not reach it. Each run also gets a new
# KBX_WORK, and references are computed again (KBX_REF_CACHE=off) unless REF_CACHE names a folder.
# The track is `any` (TRACK): the candidates hold no @triton.jit of their own, which --track
# triton rejects statically (static_reject).
# Expects the kbx binary carried in .carry/ (bench/README.md), else build/.
#   OUT=/dir [TIMEOUT=400] [SAMPLE=12 | SAMPLE=Cat/a,Cat/b] [JOBS=n] [DYNAMIC=auto|false|true]
#     [RUNS="full serial"] [FROM_DB=file(.gz)] [REF_CACHE=dir SEED=n] [REF_WORKERS=n]
#     bash bench/compile_workload_gpu.sh
# REF_WORKERS: --reference-workers for the full run (default: from the lanes, min(8, lanes/2 + 2)).
# REF_CACHE with SEED: the reference cache of an earlier run with --seed SEED (the references as
# candidates, bench/pipeline_profile_gpu.sh's seed is 7): the method's run then finds every
# task's reference work done, as a second method on the same machine does.
# RUNS: which of the two runs (both by default, about 2 x TIMEOUT: more than one device call's
# 600 s allows, so give each its own call: RUNS=full TIMEOUT=540, then RUNS=serial).
set -uo pipefail
cd "$(dirname "$0")/.."
KBX=${KBX:-$PWD/.carry/bin/kbx}
[ -x "$KBX" ] || KBX=$PWD/build/kbx
OUT=${OUT:-$PWD/gpu-out}/compile_workload
TIMEOUT=${TIMEOUT:-400}
SAMPLE=${SAMPLE:-12}
TRACK=${TRACK:-any}
DYNAMIC=${DYNAMIC:-auto}  # torch.compile's dynamic: auto (torch's default), false or true
WORK_ROOT=${WORK_ROOT:-/dev/shm/kbx-work-compile}
export KBX_REF_CACHE=${REF_CACHE:-off}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
: > "$OUT/walls.txt"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

log "candidates: torch.compile (inductor, dynamic $DYNAMIC) of every reference"
rm -rf "$OUT/cands"
python3 bench/make_compile_candidates.py --tasks tasks --out "$OUT/cands" --backend inductor \
  --dynamic "$DYNAMIC" || exit 1
ALL=$(find "$OUT/cands" -name '*.py' | wc -l)

# SAMPLE: a list of tasks, or a number n: the first task (sorted) of n categories evenly spread
# over the sorted categories (every category when n is at least their number, then more tasks).
if [[ $SAMPLE =~ ^[0-9]+$ ]]; then
  SAMPLE=$(python3 - "$SAMPLE" <<'EOF'
import pathlib, sys
n = int(sys.argv[1])
cats = {}
for t in sorted(pathlib.Path("tasks").glob("*/*/task.toml")):
    cats.setdefault(t.parent.parent.name, []).append(f"{t.parent.parent.name}/{t.parent.name}")
picked, depth = [], 0
while len(picked) < n:
    row = [c for c in sorted(cats) if depth < len(cats[c])]  # categories with a task left
    if not row:
        break
    left = n - len(picked)
    if left < len(row):
        row = [row[k * len(row) // left] for k in range(left)]  # evenly spread
    picked += [cats[c][depth] for c in row]
    depth += 1
print(",".join(picked))
EOF
)
fi
echo "sample: $SAMPLE" | tee "$OUT/sample.txt"

# run NAME JOBS DESCRIPTION kbx-eval-args...: one cold run of JOBS candidates, its wall time and
# its verdicts (a run stopped by TIMEOUT keeps the jobs it finished: judged < JOBS)
run() {
  local name=$1 jobs=$2 what=$3; shift 3
  local work="$WORK_ROOT-$name"
  rm -rf "$work" "$OUT/$name.db"
  # FROM_DB: a database whose eager timings of this machine the run takes (no eager timing again)
  [ -n "${FROM_DB:-}" ] && gunzip -c -f "$FROM_DB" > "$OUT/$name.db"
  log "$what"
  local t0=$(date +%s.%N)
  KBX_WORK="$work" timeout --signal=INT "$TIMEOUT" "$KBX" eval --method torch-compile \
    --candidates "$OUT/cands" --track "$TRACK" --device cuda --db "$OUT/$name.db" --fresh ${SEED:+--seed "$SEED"} "$@" \
    > "$OUT/$name.log" 2>&1
  local rc=$? t1=$(date +%s.%N)
  rm -rf "$work"
  "$KBX" results --db "$OUT/$name.db" --format csv > "$OUT/$name.csv" 2>/dev/null
  # (session 33) every verdict but passed, with its whole detail (the log's line is cut short):
  # the database itself is removed by the callers, and a crash needs its stderr to be told apart
  "$KBX" results --db "$OUT/$name.db" --method torch-compile --format json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; json.dump([{k: x.get(k) for k in ("task","status","detail")} for x in r if x.get("status") not in ("passed", None)], sys.stdout, indent=1)' \
    > "$OUT/$name-failures.json" || true
  python3 - "$OUT/$name.csv" "$name" "$t0" "$t1" "$rc" "$jobs" <<'EOF' | tee -a "$OUT/walls.txt"
import collections, csv, statistics, sys
path, name, rc, jobs = sys.argv[1], sys.argv[2], sys.argv[5], int(sys.argv[6])
with open(path) as f:
    # this method's rows only: a FROM_DB database holds other methods' runs (the references')
    rows = [r for r in csv.DictReader(f) if r["method"] == "torch-compile"]
wall = float(sys.argv[4]) - float(sys.argv[3])
statuses = collections.Counter(r["status"] for r in rows)
passed = statuses.get("passed", 0)
launched = sum(1 for r in rows if int(r["triton_launches"] or 0) > 0)
per_job = [float(r["wall_s"]) for r in rows]
print(f"{name}: wall_s={wall:.1f} exit={rc} judged={len(rows)}/{jobs} passed={passed}/{len(rows)} "
      f"wall_per_kernel_s={wall / max(len(rows), 1):.2f} "
      f"job_wall_s_median={statistics.median(per_job) if per_job else 0:.2f} "
      f"with_triton_launches={launched}/{len(rows)}")
print(f"{name} statuses: " + " ".join(f"{s}={c}" for s, c in statuses.most_common()))
EOF
  grep "^eval" "$OUT/$name.log" | grep -v " passed " | head -40
}

RUNS=${RUNS:-full serial}
[[ " $RUNS " == *" full "* ]] && run full "$ALL" "every task ($ALL candidates), default --jobs${JOBS:+ ($JOBS)}${REF_WORKERS:+, $REF_WORKERS reference workers}" \
  ${JOBS:+--jobs "$JOBS"} ${REF_WORKERS:+--reference-workers "$REF_WORKERS"}
[[ " $RUNS " == *" serial "* ]] && run serial "$(echo "$SAMPLE" | tr ',' '\n' | wc -l)" "the sample, --jobs 1" \
  --jobs 1 --tasks "$SAMPLE"
log "done: $OUT/walls.txt"
