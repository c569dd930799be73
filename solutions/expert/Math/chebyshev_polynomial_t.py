import torch
import triton
import triton.language as tl

_BLOCK = 2048
_UNROLL_MAX = 64  # degrees up to this are compile-time constants (the recurrence fully unrolled)

# T_n(x) by the three-term recurrence T_{k+1} = 2x T_k - T_{k-1}, run in float64 (on [-1, 1] it is
# neutrally stable: error ~ n^2 float64 ulps; outside, the growing solution dominates), rounded once at
# the store: n DFMA per element, well under the memory time on the H200 for the degrees used here.
# Where the value leaves float32's range, PyTorch's float32 recurrence gives +-inf or NaN (inf - inf)
# rather than the rounded float64 value; so blocks that hold an |x| > 1 also run that float32
# recurrence and take its results where either overflows, which keeps the overflow classes PyTorch's.
# T_0 = 1 for every input (NaN included), T_1 = x, and 0 for a negative n, as in PyTorch.


@triton.jit
def _cheb_t_f32(x, n, N: tl.constexpr):
    # N: the degree as a compile-time constant (then n is unused), or -1 for a runtime degree n
    xd = x.to(tl.float64)
    x2 = xd + xd
    p = tl.full(xd.shape, 1.0, tl.float64)
    q = xd
    if N >= 0:
        for _ in tl.static_range(1, N):
            t = x2 * q - p
            p = q
            q = t
    else:
        for _ in range(1, n):
            t = x2 * q - p
            p = q
            q = t
    res = q.to(tl.float32)
    outside = tl.abs(x) > 1.0
    if tl.max(outside.to(tl.int32), axis=0) > 0:
        xf = tl.where(outside, x, 0.0)
        xf2 = xf + xf
        pf = tl.full(xf.shape, 1.0, tl.float32)
        qf = xf
        if N >= 0:
            for _ in tl.static_range(1, N):
                tf = xf2 * qf - pf
                pf = qf
                qf = tf
        else:
            for _ in range(1, n):
                tf = xf2 * qf - pf
                pf = qf
                qf = tf
        # PyTorch's inf/NaN where its float32 recurrence overflows, and its finite value where only the
        # rounding of the float64 one reaches inf
        res = tl.where(outside & ((tl.abs(qf) == float("inf")) | (qf != qf) | (tl.abs(res) == float("inf"))),
                       qf, res)
    if N == 0:
        res = tl.full(x.shape, 1.0, tl.float32)
    if N < 0:
        if n == 0:
            res = tl.full(x.shape, 1.0, tl.float32)
        if n < 0:
            res = tl.zeros(x.shape, tl.float32)
    return res


@triton.jit
def _cheb_t_kernel(x_ptr, y_ptr, numel, n, N: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    full = start + BLOCK <= numel
    if full:
        # full block: unmasked, so the loads and stores vectorize whatever numel is
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < numel, other=0.0)
    res = _cheb_t_f32(x.to(tl.float32), n, N)
    if full:
        tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=offs < numel)


def chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    numel = x.numel()
    if numel:
        n = int(n)
        N = n if 0 <= n <= _UNROLL_MAX else -1
        _cheb_t_kernel[(triton.cdiv(numel, _BLOCK),)](x, y, numel, n, N=N, BLOCK=_BLOCK, num_warps=8)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
