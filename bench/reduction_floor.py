"""How far an honest float32 reduction may be from the float64 answer before it looks like a
kernel that skips part of its input: the question left open in session 41 (torch.compile's
reductions fail kbx's contract, 10x PyTorch's own error, on a few full-size cases).

For each long reduction to a scalar below (the cases that failed on the H100), the inputs are
built as the task builds them, on the CPU, and the float64 result is computed on all the rows
and on the first (1 - f) of them, for a few dropped fractions f. A kernel that reads only those
rows (and averages over them) is faster by 1 / (1 - f); its relative error is the printed
`drop f`. The rows compare with two figures measured on the GPU (session 42, H100, the compile
workload, failures in bench/results/2026-12-06-h100-s42/compile-failures.txt): the relative L2
error of torch.compile's kernel and ten times PyTorch's (kbx's allowance).

  python3 bench/reduction_floor.py [--seed N] [--only Cat/name]

Runs on the CPU (about a minute and 6 GB for the four cases); needs torch and python/ on the path.
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kbx_worker.calls import upcast  # noqa: E402
from kbx_worker.casegen import Ctx  # noqa: E402
from kbx_worker.taskload import Reference  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# (task, entry, case): relative L2 error against float64 of torch.compile's kernel and of
# PyTorch's own call, from the H100 run (compile workload, session 42; kbx's failure details)
MEASURED = [
    ("Fusion/fused_exp_mean", "fused_exp_mean", "perf_f32_all_128M", 9.66e-06, 1.61e-08),
    ("Loss/mse_loss", "mse_loss", "perf_f32_mean", 5.81e-05, 2.64e-08),
    ("Loss/kl_div", "kl_div", "perf_vocab_f32", 1.06e-04, 8.52e-09),
    ("Loss/nll_loss", "nll_loss", "perf_many_rows_weight", 1.50e-05, 2.33e-07),
]
DROPPED = (0.5, 0.1, 0.01)


def _rows(args, kwargs, keep):
    """The call's arguments with every tensor whose first dimension is the first argument's
    cut to its first `keep` rows (row-aligned partners: targets; weights per class stay)."""
    n = args[0].shape[0]

    def cut(v):
        return v[:keep] if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == n else v

    return [cut(a) for a in args], {k: cut(v) for k, v in kwargs.items()}


def _case_call(task, entry, case_name, seed):
    ref = Reference(os.path.join(ROOT, "tasks", task), entry, label=task.replace("/", "_"))
    case = next(c for c in ref.cases if c.name == case_name)
    args, kwargs = case.make(Ctx(seed, "cpu"))
    return ref.entry, list(args), dict(kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--only", default="")
    a = parser.parse_args()
    print(f"torch {torch.__version__}, seed {a.seed}; relative errors of a scalar result")
    print(f"{'task, case':48} {'compile':>9} {'allowed':>9} " +
          " ".join(f"{'drop ' + str(f):>9}" for f in DROPPED) + "   speedup a drop gives")
    for task, entry, case_name, compiled, pytorch in MEASURED:
        if a.only and a.only != task:
            continue
        t0 = time.time()
        fn, args, kwargs = _case_call(task, entry, case_name, a.seed)
        args, kwargs = upcast((args, kwargs))
        full = float(fn(*args, **kwargs))
        n = args[0].shape[0]
        drops = []
        for f in DROPPED:
            part_args, part_kwargs = _rows(args, kwargs, int(round(n * (1 - f))))
            drops.append(abs(float(fn(*part_args, **part_kwargs)) - full) / abs(full))
        print(f"{task + ' ' + case_name:48} {compiled:9.2e} {10 * pytorch:9.2e} " +
              " ".join(f"{d:9.2e}" for d in drops) +
              "   " + ", ".join(f"{1 / (1 - f):.2f}x" for f in DROPPED) +
              f"  ({time.time() - t0:.0f} s)", flush=True)
        del args, kwargs


if __name__ == "__main__":
    main()
