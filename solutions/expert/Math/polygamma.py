import math

import torch
import triton
import triton.language as tl

_BLOCK = 1024

# polygamma evaluated in float64 inside the kernel (float32 in and out).
#   n = 0 (digamma): recurrence psi(z) = psi(z + 1) - 1/z up to w >= 10, asymptotic series there, and
#           the reflection psi(x) = psi(1 - x) - pi cot(pi x) for x < 0.
#   n >= 1: psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x), with the Hurwitz zeta summed directly,
#           sum_{k<K} (x+k)^-(n+1), until x + K >= 10 + n (the loop runs as many times as the block
#           needs, so large arguments cost nothing), then the Euler-Maclaurin tail at w = x + K:
#           w^(1-s)/(s-1) + w^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1) w^(-s-2j+1), s = n + 1.
#           The direct sum is also right for negative non-integer x (it is the series of psi^(n)).


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float64)
    neg = x < 0.0
    w = tl.where(neg, 1.0 - x, x)
    acc = tl.zeros(w.shape, tl.float64)
    for _ in tl.static_range(10):
        small = w < 10.0
        acc = tl.where(small, acc + 1.0 / w, acc)
        w = tl.where(small, w + 1.0, w)
    r = 1.0 / w
    r2 = r * r
    # B_2k / (2k), k = 1..7
    s = 0.007575757575757576 + r2 * (-0.02109279609279609 + r2 * 0.08333333333333333)
    s = -0.004166666666666667 + r2 * s
    s = 0.003968253968253968 + r2 * s
    s = -0.008333333333333333 + r2 * s
    s = 0.08333333333333333 + r2 * s
    psi = tl.log(w) - 0.5 * r - r2 * s - acc
    t = x - tl.floor(x + 0.5)  # exact, in [-1/2, 1/2]
    a = 3.141592653589793 * t
    res = tl.where(neg, psi - 3.141592653589793 * tl.cos(a) / tl.sin(a), psi)
    res = tl.where(neg & (t == 0.0), float("nan"), res)  # negative integers
    res = tl.where(x == 0.0, tl.where(1.0 / x < 0.0, float("inf"), float("-inf")), res)
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _ipow(z, S: tl.constexpr):
    p = z
    for _ in tl.static_range(S - 1):
        p = p * z
    return p


@triton.jit
def _polygamma_kernel(x_ptr, y_ptr, n, S: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    # S = n + 1, SCALE = (-1)^(n+1) n!
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float64)
    Z0: tl.constexpr = 9.0 + S
    pole = (x <= 0.0) & (x == tl.floor(x))  # 0, -0 and the negative integers (incl. -inf)
    need = tl.where((x < Z0) & (x == x) & ~pole, tl.floor(Z0 - x) + 1.0, 0.0)
    need = tl.where(mask, need, 0.0).to(tl.int32)
    kmax = tl.max(need, axis=0)
    acc = tl.zeros(x.shape, tl.float64)
    w = x
    for _ in range(kmax):
        act = w < Z0
        acc = tl.where(act, acc + 1.0 / _ipow(w, S), acc)
        w = tl.where(act, w + 1.0, w)
    r = 1.0 / w
    r2 = r * r
    ws = 1.0 / _ipow(w, S)  # w^-s
    # Euler-Maclaurin: c_j = B_2j / (2j)! * s (s+1) ... (s+2j-2), j = 1..7
    c1: tl.constexpr = 0.08333333333333333 * S
    c2: tl.constexpr = -0.001388888888888889 * S * (S + 1) * (S + 2)
    c3: tl.constexpr = 3.3068783068783064e-05 * S * (S + 1) * (S + 2) * (S + 3) * (S + 4)
    c4: tl.constexpr = -8.267195767195768e-07 * S * (S + 1) * (S + 2) * (S + 3) * (S + 4) * (S + 5) * (S + 6)
    c5: tl.constexpr = 2.08767569878681e-08 * S * (S + 1) * (S + 2) * (S + 3) * (S + 4) * (S + 5) * (S + 6) \
        * (S + 7) * (S + 8)
    c6: tl.constexpr = -5.284190138687493e-10 * S * (S + 1) * (S + 2) * (S + 3) * (S + 4) * (S + 5) * (S + 6) \
        * (S + 7) * (S + 8) * (S + 9) * (S + 10)
    c7: tl.constexpr = 1.338253653068468e-11 * S * (S + 1) * (S + 2) * (S + 3) * (S + 4) * (S + 5) * (S + 6) \
        * (S + 7) * (S + 8) * (S + 9) * (S + 10) * (S + 11) * (S + 12)
    em = c6 + r2 * c7
    em = c5 + r2 * em
    em = c4 + r2 * em
    em = c3 + r2 * em
    em = c2 + r2 * em
    em = c1 + r2 * em
    tail = ws * (w / (S - 1.0) + 0.5 + r * em)
    tail = tl.where(ws == 0.0, 0.0, tail)  # w^-s underflowed (huge x): the tail is 0
    res = SCALE * (acc + tail)
    res = tl.where(pole, SCALE * float("inf"), res)
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


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
        grid = (triton.cdiv(numel, _BLOCK),)
        if n == 0:
            _digamma_kernel[grid](x, y, numel, BLOCK=_BLOCK, num_warps=4)
        else:
            scale = float(math.factorial(n)) * (1.0 if n % 2 else -1.0)
            _polygamma_kernel[grid](x, y, numel, S=n + 1, SCALE=scale, BLOCK=_BLOCK, num_warps=4)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
