import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# On the GPU: libdevice's cyl_bessel_i0f, in float32 (max error about 6 ulp; it overflows to +inf only
# where I0 itself leaves float32's range or where PyTorch's float32 exp(|x|) factor already has, both
# accepted). The CPU interpreter cannot run libdevice, so there the same function is evaluated by a
# stand-in, I0(x) in float64 (float32 in and out), with a = |x|:
#   a <= 12: the power series sum_k (a^2/4)^k / (k!)^2 (all terms positive: no cancellation; 25 terms
#            reach 1e-16 at a = 12);
#   a > 12:  the asymptotic expansion e^a / sqrt(2 pi a) * sum_k ((2k-1)!!)^2 / (k! (8a)^k)
#            (18 terms: relative error ~1e-11 at a = 12, far smaller beyond).
# exp overflows float64 only above 709; the float32 store turns values above FLT_MAX into +inf.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _i0_f64(x):
    # the interpreter's stand-in for cyl_bessel_i0f (x float64)
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
    return tl.where(x != x, x, res)


@triton.jit
def _i0_f32(x, PRECISE: tl.constexpr):
    if PRECISE:
        return libdevice.cyl_bessel_i0(x)
    else:
        return _i0_f64(x.to(tl.float64)).to(tl.float32)


@triton.jit
def _i0_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _i0_f32(tl.load(x_ptr + offs), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _i0_f32(tl.load(x_ptr + offs, mask=mask, other=0.0), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def i0(input_tensor, out=None):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _i0_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, PRECISE=_PRECISE, num_warps=8, **_OPTS)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
