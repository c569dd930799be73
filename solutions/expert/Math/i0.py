import torch
import triton
import triton.language as tl

_BLOCK = 1024

# I0(x) evaluated in float64 inside the kernel (float32 in and out), with a = |x|:
#   a <= 12: the power series sum_k (a^2/4)^k / (k!)^2 (all terms positive: no cancellation; 25 terms
#            reach 1e-16 at a = 12);
#   a > 12:  the asymptotic expansion e^a / sqrt(2 pi a) * sum_k ((2k-1)!!)^2 / (k! (8a)^k)
#            (18 terms: relative error ~1e-11 at a = 12, far smaller beyond).
# exp overflows float64 only above 709; the float32 store turns values above FLT_MAX into +inf.


@triton.jit
def _i0_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    a = tl.abs(x)
    big = a > 12.0
    # power series
    q = tl.where(big, 0.0, 0.25 * a * a)
    term = tl.full(a.shape, 1.0, tl.float64)
    ser = term
    for k in tl.static_range(1, 26):
        term = term * q * (1.0 / (k * k))
        ser = ser + term
    # asymptotic expansion
    r = 1.0 / tl.where(big, a, 12.0)
    term = tl.full(a.shape, 1.0, tl.float64)
    asy = term
    for k in tl.static_range(1, 19):
        term = term * r * ((2 * k - 1) * (2 * k - 1) / (8.0 * k))
        asy = asy + term
    ea = tl.exp(tl.where(big, a, 0.0))
    asy = ea * asy * tl.sqrt(r * 0.15915494309189535)  # e^a sum / sqrt(2 pi a)
    res = tl.where(big, asy, ser)
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


def i0(input_tensor, out=None):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _i0_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=4)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
