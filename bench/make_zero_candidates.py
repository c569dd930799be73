"""Writes a candidate set that runs each task's reference and then zeroes every output with a
Triton kernel: right shapes and dtypes, Triton launches, wrong values. Every task must fail it.

    python bench/make_zero_candidates.py OUT_DIR [--tasks Category/name,...]
"""

import argparse
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]

WRAPPER = '''

# --- planted: the reference's answer, then every output zeroed by a Triton kernel ---
import torch as _torch
import triton
import triton.language as tl


@triton.jit
def _kbx_zero_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], dtype=ptr.dtype.element_ty), mask=offs < n)


def _kbx_zero(value):
    if isinstance(value, _torch.Tensor):
        if value.dtype == _torch.bool:
            return _torch.zeros_like(value)
        out = value.detach().clone().contiguous()
        if out.numel():
            _kbx_zero_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
        return out
    if isinstance(value, (tuple, list)):
        return type(value)(_kbx_zero(v) for v in value)
    return 0.0 if isinstance(value, float) else value


_kbx_reference_entry = {entry}


def {entry}(*args, **kwargs):
    return _kbx_zero(_kbx_reference_entry(*args, **kwargs))
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--tasks", default="")
    opts = p.parse_args()
    wanted = set(filter(None, opts.tasks.split(",")))
    out = pathlib.Path(opts.out)
    for manifest in sorted((ROOT / "tasks").glob("*/*/task.toml")):
        meta = tomllib.loads(manifest.read_text())
        task = f"{meta['category']}/{meta['name']}"
        if wanted and task not in wanted:
            continue
        source = (manifest.parent / "reference.py").read_text()
        target = out / meta["category"] / f"{meta['name']}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source + WRAPPER.replace("{entry}", meta["entry"]))
    print(f"wrote zero candidates under {out}")


if __name__ == "__main__":
    main()
