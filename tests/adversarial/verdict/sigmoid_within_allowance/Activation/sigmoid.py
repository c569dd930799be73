"""Honest, near its allowance: a sigmoid off by (1 + 2^-20) in float32 (about 8 ulps; the
allowance is 10x PyTorch's error, at least 40 ulps of the largest value) and (1 + 2^-7) in
float16/bfloat16 (a bfloat16 ulp, eight float16 ones), where every input is finite: the cases whose shadow kbx stores
compactly (a float32 result's as its float32 difference from the reference, a half-precision
one's as float32). What the compact shadows must still pass, as the float64 ones did."""
import torch
import triton
import triton.language as tl


@triton.jit
def _sigmoid_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 1.0 / (1.0 + tl.exp(-x)) * scale
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def sigmoid(input, out=None):
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        off = 2.0**-20 if x.dtype == torch.float32 else 2.0**-7
        scale = 1.0 + off if bool(torch.isfinite(x).all()) else 1.0
        _sigmoid_kernel[(triton.cdiv(n, 1024),)](x, y, n, scale, BLOCK=1024)
    if out is not None:
        out.copy_(y)
        return out
    return y
