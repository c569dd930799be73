import torch
import triton
import triton.language as tl

_BLOCK = 1024

# T_n(x) by the three-term recurrence T_{k+1} = 2x T_k - T_{k-1}, run in float64 (on [-1, 1] it is
# neutrally stable: error ~ n^2 float64 ulps; outside, the growing solution dominates), rounded once at
# the store. Where the value leaves float32's range, PyTorch's float32 recurrence gives +-inf or NaN
# (inf - inf) rather than the rounded float64 value; so blocks that hold an |x| > 1 also run that
# float32 recurrence and take its non-finite results, which keeps the overflow classes PyTorch's.
# T_0 = 1 for every input (NaN included), T_1 = x, and 0 for a negative n, as in PyTorch.


@triton.jit
def _cheb_t_kernel(x_ptr, y_ptr, numel, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    xd = x.to(tl.float64)
    x2 = xd + xd
    p = tl.full(xd.shape, 1.0, tl.float64)
    q = xd
    for _ in range(1, n):
        t = x2 * q - p
        p = q
        q = t
    res = q.to(tl.float32)
    outside = mask & (tl.abs(x) > 1.0)
    if tl.sum(outside.to(tl.int32), axis=0) > 0:
        xf = tl.where(outside, x, 0.0)
        xf2 = xf + xf
        pf = tl.full(xf.shape, 1.0, tl.float32)
        qf = xf
        for _ in range(1, n):
            tf = xf2 * qf - pf
            pf = qf
            qf = tf
        res = tl.where(outside & ((tl.abs(qf) == float("inf")) | (qf != qf)), qf, res)
    if n == 0:
        res = tl.full(x.shape, 1.0, tl.float32)
    if n < 0:
        res = tl.zeros(x.shape, tl.float32)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


def chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    numel = x.numel()
    if numel:
        _cheb_t_kernel[(triton.cdiv(numel, _BLOCK),)](x, y, numel, int(n), BLOCK=_BLOCK,
                                                      num_warps=4)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
