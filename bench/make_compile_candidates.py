"""Writes a candidate set of torch.compile'd references: for every task, its reference.py as it
is, followed by a block that rebinds the task's entry to torch.compile of the original function.
With Inductor (the default backend) on the GPU every candidate runs Triton kernels that Inductor
generated: a realistic workload for throughput measurements (issue 14) and a non-LLM baseline
method. Judge it with `--track any`: the source has no @triton.jit of its own.

    python bench/make_compile_candidates.py --tasks tasks --out DIR [--backend inductor|eager]
                                            [--dynamic auto|false|true] [--only Category/name,...]

writes DIR/<Category>/<name>.py for each task folder tasks/<Category>/<name>/ (sorted), then one
summary line. `--backend eager` runs Dynamo's capture without Inductor's code generation (the
CPU test: Inductor on the CPU generates and compiles C++, about a minute per task on two cores,
and needs a C++ compiler visible in the sandbox). `--dynamic` is torch.compile's
`dynamic`: auto (torch's default: static first, dimensions and scalars that change between calls
recompiled as symbolic), false (one static compilation per distinct shape, dtype and scalar,
kernels specialised to each case's sizes) or true (symbolic from the first call).
"""

import argparse
import pathlib
import sys
import tomllib

BACKENDS = ("inductor", "eager")
DYNAMIC = {"auto": "", "false": ", dynamic=False", "true": ", dynamic=True"}

# Appended to each reference; names prefixed _kbx_ so that none clashes with the reference's own.
BLOCK = '''

# --- kbx: torch.compile baseline (bench/make_compile_candidates.py) ---
import functools as _kbx_functools
import torch as _kbx_torch
import torch._dynamo as _kbx_dynamo
import torch._inductor.config as _kbx_inductor_config

# A task's cases differ in shapes, dtypes and scalar arguments, each a recompilation: past the
# limit (8 by default) Dynamo would run the rest eagerly. The name changed across torch versions
# (recompile_limit, with cache_size_limit an alias of it in newer ones): set those that exist.
for _kbx_limit in ("recompile_limit", "cache_size_limit"):
    if hasattr(_kbx_dynamo.config, _kbx_limit):
        setattr(_kbx_dynamo.config, _kbx_limit, 64)
# Compile in this process: no pool of compile workers inside the candidate's sandbox.
_kbx_inductor_config.compile_threads = 1

_kbx_eager_{entry} = {entry}
_kbx_compiled_{entry} = _kbx_torch.compile(_kbx_eager_{entry}, backend="{backend}"{dynamic})


@_kbx_functools.wraps(_kbx_eager_{entry})
def {entry}(*args, **kwargs):
    return _kbx_compiled_{entry}(*args, **kwargs)
'''


class TaskError(Exception):
    pass


def entry_of(manifest):
    """The task's entry function's name, from its task.toml."""
    try:
        meta = tomllib.loads(manifest.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TaskError(f"{manifest}: cannot read it: {exc}") from exc
    entry = meta.get("entry")
    if not isinstance(entry, str) or not entry:
        raise TaskError(f"{manifest}: no `entry = \"...\"` (the task's entry function)")
    if not entry.isidentifier():
        raise TaskError(f"{manifest}: entry {entry!r} is not a Python name")
    return entry


def candidate_source(reference_text, entry, backend, dynamic="auto"):
    """The reference unchanged, then the block that compiles its entry."""
    if not reference_text.endswith("\n"):
        reference_text += "\n"
    return reference_text + (BLOCK.replace("{entry}", entry).replace("{backend}", backend)
                             .replace("{dynamic}", DYNAMIC[dynamic]))


def task_folders(tasks, only):
    """The task folders (Category/name, path), sorted; those of `only` alone when given."""
    found = {f"{d.parent.name}/{d.name}": d for d in tasks.glob("*/*")
             if (d / "task.toml").is_file()}
    if not found:
        raise TaskError(f"{tasks}: no task folders (<Category>/<name>/task.toml)")
    if only:
        missing = sorted(set(only) - set(found))
        if missing:
            raise TaskError(f"--only: no such task under {tasks}: {', '.join(missing)}")
        found = {k: v for k, v in found.items() if k in only}
    return sorted(found.items())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="tasks", help="the suite's folder (default: tasks)")
    p.add_argument("--out", required=True, help="the candidate folder to write")
    p.add_argument("--backend", choices=BACKENDS, default="inductor",
                   help="torch.compile's backend (default: inductor)")
    p.add_argument("--dynamic", choices=sorted(DYNAMIC), default="auto",
                   help="torch.compile's dynamic: auto (None, torch's default), false or true")
    p.add_argument("--only", default="", help="Category/name,... (default: every task)")
    opts = p.parse_args(argv)
    tasks, out = pathlib.Path(opts.tasks), pathlib.Path(opts.out)
    try:
        folders = task_folders(tasks, {t.strip() for t in opts.only.split(",") if t.strip()})
        written = []
        for name, folder in folders:
            entry = entry_of(folder / "task.toml")
            reference = folder / "reference.py"
            try:
                text = reference.read_text()
            except OSError as exc:
                raise TaskError(f"{reference}: cannot read it: {exc}") from exc
            source = candidate_source(text, entry, opts.backend, opts.dynamic)
            written.append((out / f"{name}.py", source))
    except TaskError as exc:
        print(f"make_compile_candidates: {exc}", file=sys.stderr)
        return 1
    for target, source in written:  # every task read before anything is written
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
    print(f"{len(written)} files written under {out} (torch.compile, backend {opts.backend}, "
          f"dynamic {opts.dynamic})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
