import math
from fractions import Fraction

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# polygamma in float32 (no float64), a fixed amount of work per element for positive inputs.
#   n = 0 (digamma): psi(z) = ln z - 1/(2z) - sum_k B_2k / (2k z^2k), k = 1..4, for z >= 6; below 6 the
#           recurrence taken six steps at once, psi(z) = (psi(z + 6) - [1/(z+1) + ... + 1/(z+5)]) - 1/z,
#           the bracket summed as one fraction; x < 0 by the reflection psi(x) = psi(1 - x) - pi cot(pi x)
#           with pi x reduced exactly (only in blocks that hold a negative input).
#   n >= 1: psi^(n)(x) = (-1)^(n+1) n! zeta(s, x), s = n + 1, with the Hurwitz zeta of integer order
#           zeta(s, y) = sum_{k<K} (y+k)^-s + T(w = y + K), K = 0 when y >= W0 = max(6, s), and the
#           Euler-Maclaurin tail T(w) = w^(1-s) [1/(s-1) + 1/(2w) + sum_{j=1..8} B_2j/(2j)! (s)_(2j-1) w^-2j]
#           (truncation below 2e-9 relative at w = W0 for every s). For s <= 6 the direct terms are
#           k = 0 (on its own: full relative accuracy for small y) and k = 1..5 summed as one fraction
#           (all terms positive; the products stay far inside float32's range), so no loop; larger s
#           loop over the direct terms. Negative non-integer x are first brought to y = x + M in [0, 1)
#           by the M direct terms (x+k)^-s, k < M (exact shifts; only in blocks that hold one).
#           Poles: x = 0 and the negative integers give (-1)^(n+1) n! * inf, as in PyTorch.
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
def _ipow(z, S: tl.constexpr):
    # z^S for an integer S >= 1, by squaring where it saves roundings
    if S == 1:
        p = z
    elif S == 2:
        p = z * z
    elif S == 3:
        p = z * z * z
    elif S == 4:
        z2 = z * z
        p = z2 * z2
    elif S == 5:
        z2 = z * z
        p = z2 * z2 * z
    elif S == 6:
        z2 = z * z
        p = z2 * z2 * z2
    else:
        p = z
        for _ in tl.static_range(S - 1):
            p = p * z
    return p


@triton.jit
def _recip(v):
    return tl.math.div_rn(tl.full(v.shape, 1.0, tl.float32), v)


@triton.jit
def _zeta_int_pos(y, S: tl.constexpr, W0: tl.constexpr,
                  C1: tl.constexpr, C2: tl.constexpr, C3: tl.constexpr, C4: tl.constexpr,
                  C5: tl.constexpr, C6: tl.constexpr, C7: tl.constexpr, C8: tl.constexpr):
    # zeta(S, y) = sum_{k>=0} (y + k)^-S for y >= 0 (y = 0 gives +inf), float32; C_j = B_2j/(2j)! (S)_(2j-1)
    if S <= 6:
        # W0 = 6: the terms k = 0..5 when y < 6, none above
        small = y < 6.0
        num = tl.zeros(y.shape, tl.float32)
        den = tl.full(y.shape, 1.0, tl.float32)
        for k in tl.static_range(1, 6):
            a = _ipow(y + k, S)  # y + k < 11: a < 11^6, den < (7*8*9*10*11)^6 ~ 3e28
            num = num * a + den
            den = den * a
        direct = _recip(_ipow(y, S)) + tl.math.div_rn(num, den)
        w = tl.where(small, y + 6.0, y)
    else:
        cnt = tl.where(y < W0, tl.ceil(W0 - y), 0.0).to(tl.int32)
        direct = tl.zeros(y.shape, tl.float32)
        for k in range(tl.max(cnt, axis=0)):
            direct += tl.where(k < cnt, _recip(_ipow(y + k, S)), 0.0)
        w = y + cnt.to(tl.float32)
    # Euler-Maclaurin tail at w >= W0: w^(1-S) [1/(S-1) + r/2 + sum_j C_j r^2j], r = 1/w
    if S == 2:
        r = _recip(w)
        lead = r  # w^(1-S)
    else:
        r = 1.0 / w  # w >= 6: r only enters the correction terms, the approximate GPU division is enough
        lead = _recip(_ipow(w, S - 1))
    r2 = r * r
    em = C7 + r2 * C8
    em = C6 + r2 * em
    em = C5 + r2 * em
    em = C4 + r2 * em
    em = C3 + r2 * em
    em = C2 + r2 * em
    em = C1 + r2 * em
    tail = lead * ((1.0 / (S - 1.0)) + 0.5 * r + r2 * em)
    if S <= 6:
        res = tl.where(small, direct + tail, tail)
    else:
        res = direct + tail
    return res


@triton.jit
def _polygamma_f32(x, S: tl.constexpr, SCALE: tl.constexpr, W0: tl.constexpr,
                   C1: tl.constexpr, C2: tl.constexpr, C3: tl.constexpr, C4: tl.constexpr,
                   C5: tl.constexpr, C6: tl.constexpr, C7: tl.constexpr, C8: tl.constexpr):
    pole = (x <= 0.0) & (x == tl.floor(x))  # 0, -0 and the negative integers (incl. -inf)
    y = x
    head = tl.zeros(x.shape, tl.float32)
    if tl.max((x < 0.0).to(tl.int32), axis=0) > 0:
        # negative non-integers: the M = ceil(-x) terms (x + k)^-S, k < M, then y = x + M in (0, 1)
        # (x + k is exact: a float32 multiple of ulp(x) of smaller magnitude)
        m = tl.where((x < 0.0) & ~pole, tl.ceil(-x), 0.0)
        cnt = m.to(tl.int32)
        for k in range(tl.max(cnt, axis=0)):
            head += tl.where(k < cnt, _recip(_ipow(x + k, S)), 0.0)
        y = tl.where(pole, 1.0, x + m)
    z = head + _zeta_int_pos(y, S, W0, C1, C2, C3, C4, C5, C6, C7, C8)
    res = SCALE * z
    res = tl.where(pole, SCALE * float("inf"), res)
    return tl.where(x != x, x, res)


@triton.jit
def _polygamma_kernel(x_ptr, y_ptr, n, ORDER: tl.constexpr, SCALE: tl.constexpr, W0: tl.constexpr,
                      C1: tl.constexpr, C2: tl.constexpr, C3: tl.constexpr, C4: tl.constexpr,
                      C5: tl.constexpr, C6: tl.constexpr, C7: tl.constexpr, C8: tl.constexpr,
                      BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    full = start + BLOCK <= n
    if full:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        x = tl.load(x_ptr + offs).to(tl.float32)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0).to(tl.float32)
    if ORDER == 0:
        res = _digamma_f32(x, PRECISE)
    else:
        res = _polygamma_f32(x, ORDER + 1, SCALE, W0, C1, C2, C3, C4, C5, C6, C7, C8)
    if full:
        tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty))
    else:
        tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=offs < n)


def _bernoulli(m):
    """Bernoulli numbers B_0..B_m as Fractions (B_1 = -1/2)."""
    b = [Fraction(0)] * (m + 1)
    for k in range(m + 1):
        b[k] = Fraction(1) if k == 0 else -sum(math.comb(k + 1, j) * b[j] for j in range(k)) / (k + 1)
    return b


_B = _bernoulli(16)


def _em_coefficients(s):
    """C_j = B_2j / (2j)! * s (s+1) ... (s+2j-2), j = 1..8."""
    out = []
    for j in range(1, 9):
        rising = 1
        for i in range(2 * j - 1):
            rising *= s + i
        out.append(float(_B[2 * j] / math.factorial(2 * j) * rising))
    return out


def polygamma(n, input, *, out=None):
    if not isinstance(n, int) or n < 0:
        raise ValueError("n must be a non-negative integer.")
    x = torch.as_tensor(input)
    x = x if x.is_contiguous() else x.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    numel = x.numel()
    if numel:
        s = n + 1
        scale = float(math.factorial(n)) * (1.0 if n % 2 else -1.0) if n else 1.0
        coef = _em_coefficients(s) if n else [0.0] * 8
        c = {f"C{j + 1}": coef[j] for j in range(8)}
        _polygamma_kernel[(triton.cdiv(numel, _BLOCK),)](
            x, y, numel, ORDER=n, SCALE=scale, W0=float(max(6, s)), **c,
            BLOCK=_BLOCK, PRECISE=_PRECISE, num_warps=8, **_OPTS)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
