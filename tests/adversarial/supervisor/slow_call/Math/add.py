# Stands in for a candidate that takes kbx down: it sits in its call (until kbx, and with it its
# warm parent, is gone) while tests/python/test_supervisor.py SIGKILLs kbx. Twice, and the third
# kbx eval stores killed_harness without running it.
import os
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + alpha * y, mask=mask)


def _triton_add(input, other, alpha=1, out=None):
    other = other if isinstance(other, torch.Tensor) else torch.tensor(other, device=input.device)
    dtype = torch.result_type(input, other)
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.expand(shape).to(dtype).contiguous()
    y = other.expand(shape).to(dtype).contiguous()
    res = torch.empty(shape, dtype=dtype, device=input.device)
    n = res.numel()
    if n:
        _add_kernel[(triton.cdiv(n, 1024),)](x, y, res, alpha, n, BLOCK=1024)
    if out is not None:
        out.copy_(res)
        return out
    return res


def add(input, other, alpha=1, out=None):
    parent = os.getppid()
    for _ in range(600):
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.1)
    return _triton_add(input, other, alpha, out)
