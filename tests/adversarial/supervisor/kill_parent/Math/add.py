# Attack: kill the process that started this one. Forked from the warm parent, that is the warm
# parent; started cold (--cold), it is kbx itself. Either way the run must finish, with this job
# not passed (killed_harness after two deaths) and every other job judged as usual.
import os
import signal

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
    # Where the sandbox hides the parent (a PID namespace: getppid() is 0), nothing is killed
    # and the answer below is wrong on purpose: the attack failed, so must the job.
    if parent > 1:
        os.kill(parent, signal.SIGKILL)
    res = _triton_add(input, other, alpha, out)
    return res.add_(1) if res.numel() else res
