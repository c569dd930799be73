import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _asin_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    a = tl.abs(x)
    # |x| <= 1/2: asin(a) = a + a z P(z) with z = a^2.  |x| > 1/2: asin(a) = pi/2 - 2 asin(s) with
    # s = sqrt((1 - a) / 2); 1 - a is exact there, so the steep end near 1 keeps full accuracy.
    # P is the float32 minimax polynomial of Cephes' asinf (peak error about 2 ulp).
    big = a > 0.5
    z = tl.where(big, 0.5 * (1.0 - a), a * a)
    s = tl.where(big, tl.sqrt_rn(z), a)  # NaN beyond |x| = 1
    p = 4.2163199048e-2
    p = p * z + 2.4181311049e-2
    p = p * z + 4.5470025998e-2
    p = p * z + 7.4953002686e-2
    p = p * z + 1.6666752422e-1
    r = s + s * z * p
    r = tl.where(big, (1.5707963705062866 - (r + r)) - 4.371139e-08, r)  # pi/2 as float32 plus its residual
    # the sign of x, -0.0 included
    bits = r.to(tl.int32, bitcast=True) | (x.to(tl.int32, bitcast=True) & -2147483648)
    y = bits.to(tl.float32, bitcast=True)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _asin_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _asin_block(x_ptr, y_ptr, offs, offs < n)


def asin(input_tensor):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _asin_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=8)
    return y
