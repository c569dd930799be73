import torch
import triton
import triton.language as tl

_BLOCK = 1024

# digamma evaluated in float64 inside the kernel (float32 in and out):
#   z >= 1 or 0 < z < 1: recurrence psi(z) = psi(z + 1) - 1/z up to w >= 10, then the asymptotic series
#           psi(w) = ln w - 1/(2w) - sum_k B_2k / (2k w^2k)   (7 terms: error < 1e-16 for w >= 10);
#   x < 0:  reflection psi(x) = psi(1 - x) - pi cot(pi x), with pi x reduced exactly (x - round(x)).
# Poles: psi(+0) = -inf, psi(-0) = +inf, psi(negative integer) = NaN (PyTorch's conventions).


@triton.jit
def _digamma_pos(z):
    acc = tl.zeros(z.shape, tl.float64)
    w = z
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
    return tl.log(w) - 0.5 * r - r2 * s - acc


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float64)
    neg = x < 0.0
    psi = _digamma_pos(tl.where(neg, 1.0 - x, x))
    r = x - tl.floor(x + 0.5)  # exact, in [-1/2, 1/2]
    a = 3.141592653589793 * r
    refl = psi - 3.141592653589793 * tl.cos(a) / tl.sin(a)
    res = tl.where(neg, refl, psi)
    res = tl.where(neg & (r == 0.0), float("nan"), res)  # negative integers (and -inf)
    res = tl.where(x == 0.0, tl.where(1.0 / x < 0.0, float("inf"), float("-inf")), res)
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


def digamma(input_tensor):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _digamma_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=4)
    return y
