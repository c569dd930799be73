#!/usr/bin/env bash
# Which cases make a torch.compile candidate compile a new graph (issue 14's compile workload),
# on the CPU: the candidates of bench/make_compile_candidates.py with Dynamo's capture only
# (--backend eager: the same guards and graphs as Inductor's, without its code generation), each
# with a wrapper that appends Dynamo's count of compiled frames after every call to a file in its
# job folder; kbx eval runs every tier (edge, small, full) without timing and keeps the folders.
# On the GPU each new graph is Inductor's code generation and Triton's compiles, and a full-size
# case's first call holds the GPU's timing slot: this shows how many of those compiles run there.
#   bash bench/compile_recompiles_cpu.sh [Cat/a,Cat/b,...]   (default: four tasks; 2-3 minutes)
# Prints, per task, each call's arguments' shapes and whether it compiled; then how many of the
# full-size calls (a million elements or more) compiled. Needs build/kbx and the Python of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
TASKS=${1:-Math/add,Activation/gelu,Loss/mse_loss,Reduce/sum}
PY=${KBX_PYTHON:-$(bash scripts/setup.sh | tail -n 1)}
OUT=$(mktemp -d /tmp/kbx-recompiles-XXXXXX)
"$PY" bench/make_compile_candidates.py --tasks tasks --out "$OUT/cands" --backend eager \
  --only "$TASKS" >/dev/null
"$PY" - "$OUT/cands" <<'PYEOF'
import pathlib, re, sys
WRAP = '''

# --- bench/compile_recompiles_cpu.sh: Dynamo's compiled frames after each call ---
import os as _kbx_rc_os
from torch._dynamo.utils import counters as _kbx_rc_counters
_kbx_rc_inner = {entry}


def {entry}(*args, **kwargs):
    out = _kbx_rc_inner(*args, **kwargs)
    shapes = [list(a.shape) + [str(a.dtype).replace("torch.", "")]
              for a in args if hasattr(a, "shape")]
    with open(_kbx_rc_os.path.join(_kbx_rc_os.getcwd(), "recompiles.txt"), "a") as f:
        f.write(f"{{_kbx_rc_counters['frames']['ok']}} {{shapes}}\\n")
    return out
'''
for path in pathlib.Path(sys.argv[1]).glob("*/*.py"):
    source = path.read_text()
    entry = re.search(r"^_kbx_eager_(\w+) = ", source, re.M).group(1)
    path.write_text(source + WRAP.format(entry=entry))
PYEOF
KBX_WORK="$OUT/work" OMP_NUM_THREADS=2 KBX_PYTHON="$PY" build/kbx eval --method recompiles \
  --candidates "$OUT/cands" --track any --device cpu --db "$OUT/run.db" --fresh --no-time \
  --keep-files --tiers edge,small,full --tasks "$TASKS" 2>&1 | grep '^eval'
# The calls in order; a call whose largest argument has a million elements or more is a
# full-size case (the suite's small cases stay far below, its full ones far above).
"$PY" - "$OUT" <<'PYEOF'
import ast, math, pathlib, sys
for log in sorted(pathlib.Path(sys.argv[1]).glob("work/*/jobs/*.kept/recompiles.txt")):
    task = log.parent.name.rsplit("__", 1)[0].replace("__", "/")
    frames_before, full, full_compiled = 0, 0, 0
    print(f"== {task}")
    for line in log.read_text().splitlines():
        frames, shapes = line.split(" ", 1)
        shapes = ast.literal_eval(shapes)
        new = int(frames) > frames_before
        frames_before = int(frames)
        size = max((math.prod(s[:-1]) for s in shapes), default=0)
        large = size >= 1 << 20
        full += large
        full_compiled += large and new
        print(f"  {'full ' if large else '     '} {'compiled' if new else '        '} {shapes}")
    print(f"  full-size calls that compiled a new graph: {full_compiled} of {full}")
PYEOF
echo "(files: $OUT)"
