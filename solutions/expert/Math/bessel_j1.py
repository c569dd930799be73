import torch
import triton
import triton.language as tl

_BLOCK = 1024

# J1(x) evaluated in float64 inside the kernel (float32 in and out), for a = |x| (J1 is odd):
#   a <= 12: the power series (a/2) sum_k (-a^2/4)^k / (k! (k+1)!) (28 terms; the alternating
#            series loses at most ~4 of float64's 16 digits at a = 12);
#   a > 12:  Hankel's expansion J1(a) = sqrt(2/(pi a)) (P cos w - Q sin w), w = a - 3 pi/4, with
#            P = sum (-1)^k c_2k / a^2k, Q = sum (-1)^k c_2k+1 / a^(2k+1),
#            c_k = prod_{j<=k} (4 - (2j-1)^2) / (8j)  (24 terms: ~1e-12 at a = 12);
#            cos w and sin w are (sin a - cos a)/sqrt2 and -(sin a + cos a)/sqrt2, so the phase needs
#            no rounded multiple of pi.


@triton.jit
def _j1_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    a = tl.abs(x)
    big = a > 12.0
    # power series
    q = tl.where(big, 0.0, -0.25 * a * a)
    term = tl.full(a.shape, 1.0, tl.float64)
    ser = term
    for k in tl.static_range(1, 29):
        term = term * q * (1.0 / (k * (k + 1)))
        ser = ser + term
    ser = 0.5 * a * ser
    # Hankel expansion
    ab = tl.where(big, a, 12.0)
    r = 1.0 / ab
    u = tl.full(a.shape, 1.0, tl.float64)
    p = u
    qq = tl.zeros(a.shape, tl.float64)
    for k in tl.static_range(1, 25):
        u = u * r * ((4.0 - (2 * k - 1) * (2 * k - 1)) / (8.0 * k))
        if k % 4 == 0:
            p = p + u
        elif k % 4 == 1:
            qq = qq + u
        elif k % 4 == 2:
            p = p - u
        else:
            qq = qq - u
    s = tl.sin(ab)
    c = tl.cos(ab)
    asy = (p * (s - c) + qq * (s + c)) / tl.sqrt(3.141592653589793 * ab)
    res = tl.where(big, asy, ser)
    res = tl.where(x < 0.0, -res, res)
    res = tl.where(x == 0.0, x, res)  # keeps the sign of zero
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


def bessel_j1(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _j1_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=4)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
