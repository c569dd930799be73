import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# digamma in float32, a fixed amount of work per element (no loop, no float64):
#   z >= 6:     the asymptotic series psi(z) = ln z - 1/(2z) - sum_k B_2k / (2k z^2k), k = 1..4
#               (truncation below 2e-10 for z >= 6);
#   0 < z < 6:  the recurrence taken six steps at once,
#               psi(z) = (psi(z + 6) - [1/(z+1) + ... + 1/(z+5)]) - 1/z,
#               the bracket summed as one fraction (all terms positive: a few ulps), 1/z on its own so
#               that small z keep full relative accuracy (subnormal z included; psi(+-0) = -+inf);
#   x < 0:      the reflection psi(x) = psi(1 - x) - pi cot(pi x), with pi x reduced exactly
#               (r = x - round(x) in [-1/2, 1/2]); negative integers give NaN. Only blocks that hold a
#               negative input evaluate it.
# Divisions that set the accuracy are IEEE (div_rn). On the GPU the logarithm and sinpi/cospi are
# libdevice's (tl.log there is the approximate lg2.approx form); the CPU interpreter cannot run
# libdevice and computes tl.log, tl.sin and tl.cos exactly with numpy, so it takes those: the same
# algorithm, only the library calls differ.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _digamma_pos(z, PRECISE: tl.constexpr):
    # psi(z) for z > 0 (and z = +-0: -+inf, NaN: NaN), float32
    small = z < 6.0
    a = z + 1.0
    b = z + 2.0
    c = z + 3.0
    d = z + 4.0
    e = z + 5.0
    ab = a * b
    cd = c * d
    # 1/a + 1/b + 1/c + 1/d + 1/e = ((a + b) cd e + (c + d) ab e + ab cd) / (ab cd e)
    s5 = tl.math.div_rn(((a + b) * cd + (c + d) * ab) * e + ab * cd, ab * cd * e)
    w = tl.where(small, z + 6.0, z)
    r = 1.0 / w  # w >= 6: r only enters the small terms, the approximate GPU division is enough
    r2 = r * r
    # B_2k / (2k): 1/12, -1/120, 1/252, -1/240
    poly = r2 * (0.08333333333333333 - r2 * (0.008333333333333333 - r2 * (0.003968253968253968
                                                                           - r2 * 0.004166666666666667)))
    if PRECISE:
        lw = libdevice.log(w)
    else:
        lw = tl.log(w)
    asym = lw - 0.5 * r - poly
    inv = tl.math.div_rn(tl.full(z.shape, 1.0, tl.float32), z)
    return tl.where(small, (asym - s5) - inv, asym)


@triton.jit
def _digamma_f32(x, PRECISE: tl.constexpr):
    neg = x < 0.0
    res = _digamma_pos(tl.where(neg, 1.0 - x, x), PRECISE)
    if tl.max(neg.to(tl.int32), axis=0) > 0:
        # the reflection, only in blocks that hold a negative input
        r = x - tl.floor(x + 0.5)  # exact, in [-1/2, 1/2] (for |x| < 2^23; larger floats are integers)
        if PRECISE:
            sp = libdevice.sinpi(r)
            cp = libdevice.cospi(r)
        else:
            sp = tl.sin(3.141592653589793 * r)
            cp = tl.cos(3.141592653589793 * r)
        res = tl.where(neg, res - tl.math.div_rn(3.141592653589793 * cp, sp), res)
        res = tl.where(neg & (tl.floor(x) == x), float("nan"), res)  # negative integers (and -inf)
    return tl.where(x != x, x, res)


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _digamma_f32(tl.load(x_ptr + offs).to(tl.float32), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _digamma_f32(tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def digamma(input_tensor):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _digamma_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, PRECISE=_PRECISE, num_warps=8, **_OPTS)
    return y
