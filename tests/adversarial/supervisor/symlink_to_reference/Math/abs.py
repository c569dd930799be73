# Attack: replace the outputs file with a symlink to the reference's outputs (whose path is
# beside the inputs path the worker holds). Followed, the reference would be judged against
# itself and pass; the supervisor must not follow it. Expected: output_violation.
# the candidate runs in the worker's process, so it can wrap the function that writes outputs
import os
import sys

import torch
import triton
import triton.language as tl

import kbx_worker.calls as _calls

_write = _calls.write_kbt


@triton.jit
def _zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(out_ptr.dtype.element_ty),
             mask=offs < n)


def _reference_outputs():
    frame = sys._getframe()
    while frame is not None:
        case = frame.f_locals.get("case")
        if isinstance(case, dict) and "inputs" in case:
            return case["inputs"][: -len(".in.kbt")] + ".ref.kbt"
        frame = frame.f_back
    return None


def _spoil(path, tensors):
    _write(path, tensors)
    ref = _reference_outputs()
    if path.endswith(".cand.kbt") and ref:
        os.remove(path)
        os.symlink(ref, path)


_calls.write_kbt = _spoil


def abs(input_tensor, out=None):  # wrong on purpose (zeros): only the link could make it pass
    res = torch.empty_like(input_tensor)
    if res.numel():
        _zero_kernel[(triton.cdiv(res.numel(), 1024),)](res, res.numel(), BLOCK=1024)
    if out is not None:
        out.copy_(res)
        return out
    return res
