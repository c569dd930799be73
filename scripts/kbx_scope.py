#!/usr/bin/env python3
"""Marks each task's cases that lie inside KernelBenchX's own test scope (the `kbx` level).

Reads ../shared/kernelbenchx-v1-test-inputs.jsonl (per task, the dtypes and shapes of every
call of KernelBenchX's own test) and each task's cases, and writes the names of the cases in
scope into task.toml as `[compat] kbx_cases = [...]`. A case is in scope when it is not in the
edge tier, holds no special values (ctx.special()), and every tensor has a dtype KernelBenchX's
test uses for the task, at least one element, a rank its test uses and no more elements than its
largest tensor of that rank; every keyword argument is one its test passes (out= included), and
a true/false keyword takes a value its test gives it. docs/task-format.md, "Levels".

  scripts/kbx_scope.py [--check] [--jsonl PATH] [TASK_DIR ...]

--check writes nothing and exits 1 when a manifest's markers are not what the rule gives.
Run with the worker's Python (it imports the task references): /opt/kbx/venv/bin/python.
"""

import argparse
import inspect
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from kbx_worker.casegen import Ctx  # noqa: E402
from kbx_worker.taskload import Reference  # noqa: E402

SMALL_BOUND = 65536  # the small tier's bound on a case's tensors (docs/task-format.md)
DEFAULT_JSONL = os.path.join(ROOT, "..", "shared", "kernelbenchx-v1-test-inputs.jsonl")
TOKEN = re.compile(r"(\S+?)(?::(\w+)\[([\d, ]*)\]|=(\S*))")


class Scope:
    """What one task's KernelBenchX test passes: dtypes, largest tensor per rank, keywords."""

    def __init__(self, calls):
        self.dtypes, self.max_numel, self.kwargs, self.bools = set(), {}, set(), {}
        for call in calls:
            for m in TOKEN.finditer(call):
                path, dtype, shape, value = m.groups()
                if path.startswith("kw."):
                    key = re.split(r"[\[.]", path[3:])[0]
                    self.kwargs.add(key)
                    if value in ("True", "False"):
                        self.bools.setdefault(key, set()).add(value == "True")
                if dtype is not None:
                    dims = [int(d) for d in shape.split(",") if d.strip()]
                    n = 1
                    for d in dims:
                        n *= d
                    self.dtypes.add(dtype)
                    self.max_numel[len(dims)] = max(self.max_numel.get(len(dims), 0), n)

    def why_not(self, case, args, kwargs, special, defaults):
        """None when the case is inside the scope, else the reason."""
        if case.tier == "edge":
            return "edge tier"
        if special:
            return "special values"
        for key, value in kwargs.items():
            if any(True for _ in tensors(value)) and key not in self.kwargs:
                return f"keyword {key} (never passed by KernelBenchX's test)"
            if isinstance(value, bool) and value != defaults.get(key) and \
                    value not in self.bools.get(key, ()):
                return f"{key}={value}"
        max_rank = max(self.max_numel, default=0)
        bound = max(max(self.max_numel.values(), default=0), SMALL_BOUND)
        for t in tensors((args, kwargs)):
            dtype = str(t.dtype).replace("torch.", "")
            if dtype not in self.dtypes:
                return f"dtype {dtype}"
            if t.numel() == 0:
                return "empty tensor"
            if t.dim() > max_rank:
                return f"rank {t.dim()} > {max_rank}"
            if t.numel() > bound:
                return f"{t.numel()} elements > {bound}"
        return None


def tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors(v)


class MetaCtx(Ctx):
    """Ctx that builds tensors of the right dtype and shape on the meta device: shapes of the
    full (performance) cases without allocating them."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self.device = torch.device("meta")
        self.seed = 0
        self.gen = None
        self.used_special = False

    def _t(self, shape, dtype):
        from kbx_worker.casegen import _shape
        return torch.empty(_shape(shape), dtype=dtype, device="meta")

    def randn(self, *shape, dtype=torch.float32, mean=0.0, std=1.0):
        return self._t(shape, dtype)

    def uniform(self, *shape, low=0.0, high=1.0, dtype=torch.float32):
        return self._t(shape, dtype)

    def outliers(self, *shape, dtype=torch.float32, frac=0.01, scale=1000.0):
        return self._t(shape, dtype)

    def randint(self, low, high, *shape, dtype=torch.int64):
        return self._t(shape, dtype)

    def randperm(self, n, dtype=torch.int64):
        return self._t((n,), dtype)

    def bernoulli(self, *shape, p=0.5):
        return self._t(shape, torch.bool)


def build(case):
    """(args, kwargs, special) of a case: on the meta device for full cases where the builder
    allows it, else for real on the CPU."""
    if case.tier == "full":
        try:
            ctx = MetaCtx()
            args, kwargs = case.make(ctx)
            return args, kwargs, ctx.used_special
        except Exception:  # the builder computes on its values: build it for real
            pass
    ctx = Ctx(0, "cpu")
    args, kwargs = case.make(ctx)
    return args, kwargs, ctx.used_special


def scope_of(task_dir, scope):
    """Names of the task's cases inside the scope, and the reason for each case outside."""
    entry = read_entry(task_dir)
    ref = Reference(task_dir, entry, label="scope_" + re.sub(r"\W", "_", task_dir))
    defaults = {k: p.default for k, p in inspect.signature(ref.entry).parameters.items()
                if p.default is not inspect.Parameter.empty}
    inside, outside = [], {}
    for case in ref.cases:
        if case.tier == "edge":
            outside[case.name] = "edge tier"
            continue
        args, kwargs, special = build(case)
        why = (scope.why_not(case, args, kwargs, special, defaults) if scope
               else "no KernelBenchX test")
        if why is None:
            inside.append(case.name)
        else:
            outside[case.name] = why
    return inside, outside


def read_entry(task_dir):
    with open(os.path.join(task_dir, "task.toml")) as f:
        return re.search(r'^entry\s*=\s*"([^"]+)"', f.read(), re.M).group(1)


def render(names):
    return "kbx_cases = [" + ", ".join(f'"{n}"' for n in names) + "]"


def with_marker(text, names):
    """task.toml text with compat.kbx_cases set to names (the [compat] table is created when
    missing; the line goes right after the table header)."""
    line = render(names)
    text = re.sub(r"^kbx_cases = \[[^\]]*\]\n", "", text, flags=re.M)
    if re.search(r"^\[compat\]\s*$", text, re.M):
        return re.sub(r"^\[compat\]\s*$", "[compat]\n" + line, text, count=1, flags=re.M)
    return text.rstrip("\n") + "\n\n[compat]\n" + line + "\n"


def current_marker(text):
    m = re.search(r"^kbx_cases = \[([^\]]*)\]", text, re.M)
    return None if m is None else re.findall(r'"([^"]+)"', m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--jsonl", default=DEFAULT_JSONL)
    ap.add_argument("--verbose", action="store_true", help="print why each case is outside")
    ap.add_argument("tasks", nargs="*")
    opts = ap.parse_args()
    scopes = {}
    with open(opts.jsonl) as f:
        for line in f:
            d = json.loads(line)
            scopes[d["task"]] = Scope(d["calls"])
    dirs = opts.tasks or sorted(
        os.path.join(ROOT, "tasks", c, n) for c in os.listdir(os.path.join(ROOT, "tasks"))
        if os.path.isdir(os.path.join(ROOT, "tasks", c))
        for n in os.listdir(os.path.join(ROOT, "tasks", c)))
    torch.set_grad_enabled(False)
    stale = []
    for d in dirs:
        d = os.path.abspath(d)
        tid = "/".join(d.split(os.sep)[-2:])
        inside, outside = scope_of(d, scopes.get(tid))
        path = os.path.join(d, "task.toml")
        with open(path) as f:
            text = f.read()
        if opts.verbose:
            print(f"{tid}: in {inside}; out {outside}")
        if current_marker(text) == inside:
            continue
        stale.append(tid)
        if not opts.check:
            with open(path, "w") as f:
                f.write(with_marker(text, inside))
    if opts.check and stale:
        print("kbx_cases out of date (run scripts/kbx_scope.py): " + ", ".join(stale))
        return 1
    print(f"{len(dirs)} tasks, {len(stale)} {'stale' if opts.check else 'updated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
