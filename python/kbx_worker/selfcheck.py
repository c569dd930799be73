"""Quick in-process check of a task while it is written.

    python -m kbx_worker.selfcheck tasks/Category/name [more task dirs] [--device cpu] [--full]

Checks the manifest's required keys, runs every edge and small case (and the full ones with
--full) with one seed twice and with another seed once, and requires: determinism for a seed,
outputs that depend on the seed, a float64 shadow that runs, and that an all-zeros and an
identity (first input) candidate fail. `kbx suite check` is the authoritative check.
"""

import argparse
import sys
import tomllib

import torch

from .argcodec import encode_call, flatten_result
from .calls import upcast
from .casegen import Ctx, case_seed
from .errmodel import error_ratio
from .taskload import Reference

REQUIRED = ("schema", "name", "category", "entry", "signature", "set", "summary", "contract",
            "compat")


# The arithmetic a cost() may name in "compute" (the peaks `kbx calibrate` measures).
COMPUTE_PEAKS = ("fp32", "tf32", "bf16", "fp16", "int8")


def _leaves(result):
    return [v for _, v in flatten_result(result)[1]]


def _tensor_leaves(result):
    out = []
    for v in _leaves(result):
        out.append(v if isinstance(v, torch.Tensor) else torch.tensor(v))
    return out


def _run(ref, task, case, seed, device, shadow):
    args, kwargs = case.make(Ctx(case_seed(seed, task, case.name), device))
    args = list(args)
    _, inputs = encode_call(args, kwargs)
    inputs = {k: v.clone() for k, v in inputs.items()}
    sargs = upcast((args, kwargs)) if shadow else None
    out = _tensor_leaves(ref.entry(*args, **kwargs))
    sout = None
    if sargs is not None:
        sout = _tensor_leaves((ref.shadow or ref.entry)(*sargs[0], **sargs[1]))
    return inputs, out, sout


def _same(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(
            torch.nan_to_num(x.float() if x.dtype == torch.bfloat16 else x, nan=0.0),
            torch.nan_to_num(y.float() if y.dtype == torch.bfloat16 else y, nan=0.0))
        for x, y in zip(a, b))


def _fails(cand, out, sout, tol, ratio, floor):
    if len(cand) != len(out):
        return True
    for c, r, s in zip(cand, out, sout or out):
        if c.shape != r.shape or c.dtype != r.dtype:
            return True
        if tol == "exact" or not (r.is_floating_point() or r.is_complex()):
            if not _same([c], [r]):
                return True
        elif error_ratio(c, r, s, floor) > ratio:
            return True
    return False


def check_candidate(task_dir, device, tiers, path):
    """Problems of a candidate file on the task's cases (in-process; for authors only)."""
    from .taskload import load_module
    with open(f"{task_dir}/task.toml", "rb") as f:
        manifest = tomllib.load(f)
    contract = manifest.get("contract", {})
    tol = contract.get("tolerance", "shadow")
    ratio = contract.get("ratio", 10.0)
    floor = contract.get("ulp_floor", 4.0)
    task = f"{manifest['category']}/{manifest['name']}"
    ref = Reference(task_dir, manifest["entry"])
    cand = getattr(load_module(path, "kbx_selfcheck_candidate"), manifest["entry"])
    problems = []
    for case in ref.cases:
        if case.tier not in tiers or case.random:
            continue
        inputs, out, sout = _run(ref, task, case, 7, device, tol == "shadow")
        args, kwargs = case.make(Ctx(case_seed(7, task, case.name), device))
        got = _tensor_leaves(cand(*list(args), **kwargs))
        _, after = encode_call(list(args), kwargs)
        if _fails(got, out, sout, tol, ratio, floor):
            worst = [error_ratio(c, r, s, floor) for c, r, s in zip(got, out, sout or out)]
            problems.append(f"case {case.name}: wrong result (error ratios {worst})")
    return problems


def _check_judge(ref, task, case, device):
    """A random case: the reference's own two draws pass judge(); all-zeros outputs fail it."""
    judge = getattr(ref.module, "judge", None)
    if judge is None:
        return [f"case {case.name} is random=True but reference.py defines no judge()"]
    outs = []
    for torch_seed in (11, 12):
        args, kwargs = case.make(Ctx(case_seed(3, task, case.name), device))
        torch.manual_seed(torch_seed)
        outs.append(ref.entry(*list(args), **kwargs))
    args, kwargs = case.make(Ctx(case_seed(3, task, case.name), device))
    verdict = judge(list(args), kwargs, outs[0], outs[1])
    problems = []
    if not verdict.get("ok"):
        problems.append(f"case {case.name}: judge rejects the reference: {verdict.get('message')}")
    zero = [torch.zeros_like(t) for t in _tensor_leaves(outs[0])]
    zero = zero[0] if len(zero) == 1 and isinstance(outs[0], torch.Tensor) else tuple(zero)
    if judge(list(args), kwargs, zero, zero).get("ok"):
        problems.append(f"case {case.name}: judge accepts all-zeros outputs")
    same = judge(list(args), kwargs, outs[0], outs[0])
    if same.get("ok"):
        problems.append(f"case {case.name}: judge accepts two identical draws (seed ignored)")
    return problems


def check_task(task_dir, device, tiers):
    problems = []
    with open(f"{task_dir}/task.toml", "rb") as f:
        manifest = tomllib.load(f)
    for key in REQUIRED:
        if key not in manifest:
            problems.append(f"task.toml: missing key {key}")
    contract = manifest.get("contract", {})
    tol = contract.get("tolerance", "shadow")
    ratio = contract.get("ratio", 10.0)
    floor = contract.get("ulp_floor", 4.0)
    task = f"{manifest.get('category')}/{manifest.get('name')}"
    ref = Reference(task_dir, manifest["entry"])
    names = [c.name for c in ref.cases]
    if len(set(names)) != len(names):
        problems.append("case names are not unique")
    full = [c for c in ref.cases if c.tier == "full"]
    if len(full) < 3:
        problems.append(f"only {len(full)} full-tier (performance) cases; need 3")
    dists = {c.dist for c in ref.cases if c.dist}
    if len(dists) < 3:
        problems.append(f"random cases use {len(dists)} distributions ({sorted(dists)}); need 3")
    if ref.cost is None:
        problems.append("reference.py defines no cost()")
    zero_fail = ident_fail = varies = False
    shadow = tol == "shadow"
    for case in ref.cases:
        if case.tier not in tiers:
            continue
        try:
            in1, out1, s1 = _run(ref, task, case, 1, device, shadow)
            in1b, out1b, _ = _run(ref, task, case, 1, device, False)
            in2, out2, _ = _run(ref, task, case, 2, device, False)
        except Exception as exc:
            problems.append(f"case {case.name}: {type(exc).__name__}: {exc}")
            continue
        if not _same(list(in1.values()), list(in1b.values())):
            problems.append(f"case {case.name}: inputs differ for the same seed")
        if not case.random and not _same(out1, out1b):
            problems.append(f"case {case.name}: outputs differ for the same seed")
        if not _same(out1, out2):
            varies = True
        if case.random:
            problems += _check_judge(ref, task, case, device)
            continue
        zeros = [torch.zeros_like(o) for o in out1]
        zero_fail |= _fails(zeros, out1, s1, tol, ratio, floor)
        first = next(iter(in1.values()), None)
        ident = [first] + [torch.zeros_like(o) for o in out1[1:]] if first is not None else []
        ident_fail |= _fails(ident, out1, s1, tol, ratio, floor)
        if case.tier == "full" and ref.cost is not None:
            args, kwargs = case.make(Ctx(1, device))
            cost = ref.cost(*args, **kwargs)
            if not {"flops", "bytes"} <= set(cost):
                problems.append(f"case {case.name}: cost() must return flops and bytes")
            if cost.get("compute", "int8") not in COMPUTE_PEAKS:
                problems.append(f"case {case.name}: cost()['compute'] is {cost['compute']!r}; "
                                f"use one of {', '.join(COMPUTE_PEAKS)}")
    if not varies:
        problems.append("outputs never change with the seed")
    if not zero_fail:
        problems.append("an all-zeros candidate passes every case")
    if not ident_fail:
        problems.append("an identity candidate passes every case")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kbx_worker.selfcheck")
    p.add_argument("tasks", nargs="+")
    p.add_argument("--device", default="cpu")
    p.add_argument("--full", action="store_true", help="also run the full (performance) tier")
    p.add_argument("--candidate", help="check this candidate file against the (single) task")
    opts = p.parse_args(argv)
    tiers = {"edge", "small", "full"} if opts.full else {"edge", "small"}
    bad = 0
    for t in opts.tasks:
        try:
            if opts.candidate:
                problems = check_candidate(t.rstrip("/"), opts.device, tiers, opts.candidate)
            else:
                problems = check_task(t.rstrip("/"), opts.device, tiers)
        except Exception as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        print(("ok   " if not problems else "FAIL ") + t)
        for msg in problems:
            print("     - " + msg)
        bad += bool(problems)
    print(f"{len(opts.tasks) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
