"""Replays torch.compile candidates outside kbx, to tell Inductor's own errors from kbx's: for
each task, the candidate file that bench/make_compile_candidates.py wrote (the reference with its
entry compiled) runs every edge, small and full case in the order kbx's worker runs them, on the
inputs kbx builds (the task's generator, the case's seed from the run's --seed), in a plain
process: no sandbox, no other jobs, no kbx file formats. Each output is compared with eager
PyTorch and with a float64 run of the reference (its shadow), as kbx's verdict does.

    python bench/compile_replay.py --cands DIR --tasks tasks --seed 7 [--device cuda]
                                   [--tiers edge,small,full] Category/name [Category/name ...]

One line per case: its name, then `ok` or what is wrong (`shape`, `raised`, `nonfinite`,
`error x<ratio>`: the compiled output's max |error| against float64 over eager's, beside the two
errors); then per task a line `task: <n> cases, <m> not ok (<first>)`. The ratio is kbx's
`ratio` (10) in spirit only: kbx also allows a floor and per-element rules, so this tells which
verdicts Inductor's output explains, not the verdicts themselves.
"""

import argparse
import math
import pathlib
import sys
import tomllib
import traceback

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from kbx_worker.argcodec import flatten_result  # noqa: E402
from kbx_worker.calls import upcast  # noqa: E402
from kbx_worker.casegen import Ctx, case_seed  # noqa: E402
from kbx_worker.taskload import Reference, load_module  # noqa: E402


def leaves(result):
    """The result's tensor leaves by name (scalars as 0-d float64 tensors)."""
    out = {}
    for name, v in flatten_result(result)[1]:
        if isinstance(v, torch.Tensor):
            out[name] = v.detach()
        elif isinstance(v, (int, float, bool)):
            out[name] = torch.tensor(float(v), dtype=torch.float64)
    return out


def max_error(got, want):
    """Max |got - want| over the positions where both are finite (float64), or 0.0."""
    g, w = got.to(torch.float64).cpu(), want.to(torch.float64).cpu()
    both = torch.isfinite(g) & torch.isfinite(w)
    if not bool(both.any()):
        return 0.0
    return float((g[both] - w[both]).abs().max())


def compare(compiled, eager, shadow):
    """'ok' or what is wrong with the compiled output against eager and float64."""
    c, e, s = leaves(compiled), leaves(eager), leaves(shadow)
    if c.keys() != e.keys():
        return f"structure {sorted(c)} vs eager {sorted(e)}"
    worst = "ok"
    for name in e:
        if tuple(c[name].shape) != tuple(e[name].shape):
            return f"shape {name}: {list(c[name].shape)} vs eager {list(e[name].shape)}"
        if not (c[name].is_floating_point() or c[name].is_complex()):
            if not torch.equal(c[name].cpu(), e[name].cpu()):
                return f"values {name}: integer/bool output differs from eager"
            continue
        if c[name].is_complex():
            continue  # not replayed: eig's outputs are compared by kbx's task judge
        cf, ef = torch.isfinite(c[name]).cpu(), torch.isfinite(e[name]).cpu()
        if not torch.equal(cf, ef) or not torch.equal(
                torch.isnan(c[name]).cpu(), torch.isnan(e[name]).cpu()):
            bad = int((cf != ef).sum())
            return f"nonfinite {name}: {bad} positions finite in one and not the other"
        ref = s.get(name, e[name])
        err_c, err_e = max_error(c[name], ref), max_error(e[name], ref)
        ratio = err_c / err_e if err_e > 0 else (math.inf if err_c > 0 else 1.0)
        if ratio > 10 and err_c > 1e-30:
            worst = f"error x{ratio:.3g} {name} (compiled {err_c:.3g}, eager {err_e:.3g})"
    return worst


def replay(task, cands, tasks, seed, device, tiers=("edge", "small", "full")):
    folder = tasks / task
    entry = tomllib.loads((folder / "task.toml").read_text())["entry"]
    ref = Reference(str(folder), entry, label="replay_" + task.replace("/", "_"))
    cand = load_module(str(cands / f"{task}.py"), "cand_" + task.replace("/", "_"))
    compiled = getattr(cand, entry)
    shadow_fn = ref.shadow or ref.entry
    bad = []
    n = 0
    for case in [c for c in ref.cases if c.tier in tiers]:
        n += 1
        if getattr(case, "random", False):
            print(f"  {task} {case.name} ({case.tier}): skipped (random: kbx judges its draws)")
            continue
        s = case_seed(seed, task, case.name)
        try:
            args, kwargs = case.make(Ctx(s, device))
            e_args, e_kwargs = case.make(Ctx(s, device))
            sargs, skwargs = upcast((list(args), kwargs))
            eager = ref.entry(*e_args, **e_kwargs)
            shadow = shadow_fn(*sargs, **skwargs)
        except Exception as exc:  # noqa: BLE001 - the reference itself: not the replay's subject
            print(f"  {task} {case.name}: reference raised {type(exc).__name__}: {exc}"[:300])
            continue
        try:
            got = compiled(*args, **kwargs)
            if device == "cuda":
                torch.cuda.synchronize()
            verdict = compare(got, eager, shadow)
        except Exception as exc:  # noqa: BLE001 - Inductor's failure is the subject
            verdict = f"raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            traceback.print_exc(limit=2, file=sys.stderr)
        print(f"  {task} {case.name} ({case.tier}): {verdict}"[:400], flush=True)
        if verdict != "ok":
            bad.append(case.name)
        del args, kwargs, e_args, e_kwargs, sargs, skwargs, eager, shadow
        if device == "cuda":
            torch.cuda.empty_cache()
    first = f" (first {bad[0]})" if bad else ""
    print(f"{task}: {n} cases, {len(bad)} not ok{first}", flush=True)
    return bool(bad)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cands", required=True, help="the candidate set (make_compile_candidates)")
    p.add_argument("--tasks", default=str(ROOT / "tasks"))
    p.add_argument("--seed", type=int, default=7, help="the kbx run's --seed")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tiers", default="edge,small,full", help="the case tiers to replay")
    p.add_argument("task", nargs="+", help="Category/name")
    opts = p.parse_args(argv)
    failing = 0
    for task in opts.task:
        try:
            failing += replay(task, pathlib.Path(opts.cands), pathlib.Path(opts.tasks),
                              opts.seed, opts.device, tuple(opts.tiers.split(",")))
        except Exception as exc:  # noqa: BLE001 - one task's failure does not stop the rest
            print(f"{task}: replay failed: {type(exc).__name__}: {exc}"[:400], flush=True)
            failing += 1
    print(f"replayed {len(opts.task)} tasks: {failing} with a case not ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
