import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# On the GPU: libdevice's lgammaf, in float32 (the function PyTorch's own CUDA kernel calls; libdevice
# built without flush-to-zero, so subnormal arguments give their finite log, about 88 to 103).
# The CPU interpreter cannot run libdevice, so there the same function is evaluated by a stand-in,
# log(|Gamma(x)|) in float64 (float32 in and out):
#   x > 0:  shift up to w = x + m >= 8 with Gamma(x) = Gamma(w) / (x (x+1) ... (w-1)), then Stirling's
#           series (w - 1/2) ln w - w + ln(2 pi)/2 + sum_k B_2k / (2k (2k-1) w^(2k-1)).
#   x < 0:  reflection |Gamma(x)| = pi / (|sin(pi x)| Gamma(1 - x)), with sin(pi x) reduced exactly
#           (x - round(x) is exact for a float32 x held in float64).
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _lgamma_pos(z):
    # z >= 1 (or any positive value): log Gamma(z), float64
    prod = tl.full(z.shape, 1.0, tl.float64)
    w = z
    for _ in tl.static_range(8):
        small = w < 8.0
        prod = tl.where(small, prod * w, prod)
        w = tl.where(small, w + 1.0, w)
    r = 1.0 / w
    r2 = r * r
    # Stirling series coefficients B_2k / (2k (2k-1)), k = 1..7 (error < 1e-17 for w >= 8)
    s = 0.0008417508417508417 + r2 * (-0.0019175269175269176 + r2 * 0.00641025641025641)
    s = -0.0005952380952380953 + r2 * s
    s = 0.0007936507936507937 + r2 * s
    s = -0.002777777777777778 + r2 * s
    s = 0.08333333333333333 + r2 * s
    lg = (w - 0.5) * tl.log(w) - w + 0.9189385332046728 + r * s
    return lg - tl.log(prod)


@triton.jit
def _lgamma_f64(x):
    # the interpreter's stand-in for lgammaf (x float64)
    neg = x < 0.0
    z = tl.where(neg, 1.0 - x, x)
    lg = _lgamma_pos(z)
    # reflection for negative x
    r = x - tl.floor(x + 0.5)  # in [-1/2, 1/2], exact
    sinpi = tl.abs(tl.sin(3.141592653589793 * r))
    refl = 1.1447298858494002 - tl.log(sinpi) - lg  # log(pi) - log|sin(pi x)| - lgamma(1 - x)
    res = tl.where(neg, refl, lg)
    res = tl.where(tl.abs(x) == float("inf"), float("inf"), res)
    return tl.where(x != x, x, res)


@triton.jit
def _gammaln_f32(x, PRECISE: tl.constexpr):
    # lgamma(+-0) = lgamma(negative integer) = lgamma(+-inf) = +inf, NaN stays NaN
    if PRECISE:
        return libdevice.lgamma(x)
    else:
        return _lgamma_f64(x.to(tl.float64)).to(tl.float32)


@triton.jit
def _gammaln_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _gammaln_f32(tl.load(x_ptr + offs), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _gammaln_f32(tl.load(x_ptr + offs, mask=mask, other=1.0), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gammaln(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _gammaln_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, PRECISE=_PRECISE, num_warps=8, **_OPTS)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
