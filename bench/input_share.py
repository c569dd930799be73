"""What share of the references' files are the inputs (issue 14: room for the references).

Builds every task's full-size inputs on the CPU from its generator (seed 1; the sizes do not
depend on the seed), counts them twice (each full case has a fresh twin with inputs of the same
shapes) and compares them with the footprint each task's references left on a GPU machine (the
`reference_bytes/...` rows of a kbx database, e.g. a cold run's).
  python3 bench/input_share.py RESULTS.db   (about 10 minutes on 2 cores; run from the repo root)
"""
import json
import os
import sqlite3
import statistics
import sys
import time
import tomllib

sys.path.insert(0, "python")
import torch  # noqa: E402

from kbx_worker.argcodec import encode_call  # noqa: E402
from kbx_worker.casegen import Ctx  # noqa: E402
from kbx_worker.taskload import Reference  # noqa: E402


def full_input_bytes(task_dir):
    entry = tomllib.load(open(f"{task_dir}/task.toml", "rb")).get("entry")
    ref = Reference(task_dir, entry, label=os.path.basename(task_dir))
    total = 0
    for case in ref.cases:
        if case.tier == "full":
            args, kwargs = case.make(Ctx(1, "cpu"))
            _, tensors = encode_call(list(args), kwargs)
            total += sum(t.numel() * t.element_size() for t in tensors.values())
    return total


def main(db_path):
    torch.set_num_threads(1)
    db = sqlite3.connect(db_path)
    footprint = {}
    for task, samples in db.execute(
            "SELECT task, samples FROM baselines WHERE kind LIKE 'reference_bytes%'"):
        value = json.loads(samples)
        footprint[task] = value[0] if isinstance(value, list) else value
    rows, t0 = [], time.time()
    for cat in sorted(os.listdir("tasks")):
        for name in sorted(os.listdir(f"tasks/{cat}")):
            task = f"{cat}/{name}"
            if not footprint.get(task):
                continue
            try:
                inputs = 2 * full_input_bytes(f"tasks/{task}")
            except Exception as exc:  # noqa: BLE001 - a task that cannot build on the CPU
                print(f"skipped {task}: {type(exc).__name__}: {str(exc)[:80]}")
                continue
            rows.append((inputs / footprint[task], task, inputs, footprint[task]))
    total_in, total = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{len(rows)} tasks ({time.time() - t0:.0f} s): full-size inputs, cases and twins, "
          f"{total_in / 1e9:.0f} GB of the references' {total / 1e9:.0f} GB "
          f"({total_in / total:.0%}); median share per task "
          f"{statistics.median(r[0] for r in rows):.0%}")


if __name__ == "__main__":
    main(sys.argv[1])
