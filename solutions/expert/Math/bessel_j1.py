import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# On the GPU: libdevice's j1f, in float32 (emulated on the CPU from libdevice's own bitcode: absolute
# error about 2e-7 below x = 30 and 7e-7 up to 500, against PyTorch's float32 4.6e-7 there; libdevice
# built without flush-to-zero, so subnormal x give x/2). The CPU interpreter cannot run libdevice, so
# there the same function is evaluated by a stand-in, J1(x) in float64 (float32 in and out), for
# a = |x| (J1 is odd):
#   a <= 12: the power series (a/2) sum_k (-a^2/4)^k / (k! (k+1)!) (28 terms; the alternating
#            series loses at most ~4 of float64's 16 digits at a = 12);
#   a > 12:  Hankel's expansion J1(a) = sqrt(2/(pi a)) (P cos w - Q sin w), w = a - 3 pi/4, with
#            P = sum (-1)^k c_2k / a^2k, Q = sum (-1)^k c_2k+1 / a^(2k+1),
#            c_k = prod_{j<=k} (4 - (2j-1)^2) / (8j)  (24 terms: ~1e-12 at a = 12);
#            cos w and sin w are (sin a - cos a)/sqrt2 and -(sin a + cos a)/sqrt2, so the phase needs
#            no rounded multiple of pi.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _j1_f64(x):
    # the interpreter's stand-in for j1f (x float64)
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
    return tl.where(x != x, x, res)


@triton.jit
def _j1_f32(x, PRECISE: tl.constexpr):
    if PRECISE:
        y = libdevice.j1(x)
    else:
        y = _j1_f64(x.to(tl.float64)).to(tl.float32)
    y = tl.where(x == 0.0, x, y)  # keeps the sign of zero
    return tl.where(x != x, x, y)


@triton.jit
def _j1_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _j1_f32(tl.load(x_ptr + offs), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _j1_f32(tl.load(x_ptr + offs, mask=mask, other=0.0), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def bessel_j1(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _j1_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, PRECISE=_PRECISE, num_warps=8, **_OPTS)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
