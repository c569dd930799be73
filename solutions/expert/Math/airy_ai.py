import torch
import triton
import triton.language as tl

_BLOCK = 1024

# Ai(x) evaluated in float64 inside the kernel (float32 in and out).
#   -6.5 <= x <= 5.5: the Maclaurin series Ai = c1 f(x) - c2 g(x),
#           f = sum 3^k (1/3)_k x^3k / (3k)!,  g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!,
#           c1 = Ai(0), c2 = -Ai'(0) (32 terms; the cancellation between f and g costs at most
#           ~e^(2 zeta) = 3e7 at x = 5.5, leaving ~1e-9 relative error);
#   x > 5.5: Ai = e^-zeta / (2 sqrt(pi) x^(1/4)) sum (-1)^k u_k / zeta^k, zeta = 2/3 x^(3/2);
#   x < -6.5: with a = -x, Ai = a^(-1/4)/sqrt(pi) [cos(zeta - pi/4) P + sin(zeta - pi/4) Q],
#           P = sum (-1)^k u_2k / zeta^2k, Q = sum (-1)^k u_(2k+1) / zeta^(2k+1),
#   u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k)  (20 terms: ~3e-9 relative at the switch
#           points, smaller beyond). cos(zeta -+ pi/4) are formed from cos zeta and sin zeta, so the
#           phase carries no rounded multiple of pi.


@triton.jit
def _airy_ai_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    pos = x > 5.5
    neg = x < -6.5
    # Maclaurin series
    xm = tl.where(pos | neg, 0.0, x)
    x3 = xm * xm * xm
    f = tl.full(x.shape, 1.0, tl.float64)
    g = xm
    sf = f
    sg = g
    for k in tl.static_range(1, 33):
        f = f * x3 * (1.0 / ((3 * k - 1) * (3 * k)))
        g = g * x3 * (1.0 / ((3 * k) * (3 * k + 1)))
        sf = sf + f
        sg = sg + g
    mac = 0.3550280538878172 * sf - 0.25881940379280677 * sg
    # asymptotic expansions
    a = tl.where(pos | neg, tl.abs(x), 8.0)
    sa = tl.sqrt(a)
    zeta = 0.6666666666666666 * a * sa
    rz = 1.0 / zeta
    u = tl.full(x.shape, 1.0, tl.float64)
    alt = u      # sum (-1)^k u_k / zeta^k
    pp = u       # sum (-1)^k u_2k / zeta^2k
    qq = tl.zeros(x.shape, tl.float64)  # sum (-1)^k u_2k+1 / zeta^2k+1
    for k in tl.static_range(1, 20):
        u = u * rz * ((6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216.0 * k))
        if k % 2 == 0:
            alt = alt + u
        else:
            alt = alt - u
        if k % 4 == 0:
            pp = pp + u
        elif k % 4 == 1:
            qq = qq + u
        elif k % 4 == 2:
            pp = pp - u
        else:
            qq = qq - u
    q4 = tl.sqrt(sa)  # a^(1/4)
    ai_pos = tl.exp(-zeta) * alt * (0.28209479177387814 / q4)  # 1 / (2 sqrt(pi))
    cz = tl.cos(zeta)
    sz = tl.sin(zeta)
    # cos(zeta - pi/4) = (cos + sin)/sqrt2, sin(zeta - pi/4) = (sin - cos)/sqrt2; 1/sqrt(2 pi)
    ai_neg = ((cz + sz) * pp + (sz - cz) * qq) * (0.3989422804014327 / q4)
    res = tl.where(pos, ai_pos, tl.where(neg, ai_neg, mac))
    res = tl.where(x != x, x, res)
    tl.store(y_ptr + offs, res.to(y_ptr.dtype.element_ty), mask=mask)


def airy_ai(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.is_contiguous():
        y = out
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _airy_ai_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=4)
    if out is not None:
        if y is not out:
            out.copy_(y)
        return out
    return y
