"""Hostile: an exact GELU except at -7.25 (gives -1000) and at subnormal inputs (gives 7), in
float32: inputs only the special-value cases hold (random normal inputs never hit -7.25 exactly or a
subnormal; session 41: an earlier trigger at +-1 was hit by a random normal case now and then, which
made its core level fail too, rightly). The normwise error of special_f32 is scaled by FLT_MAX and
cannot see it; the per-element rule must."""
import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, F32: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        # tanh(z) = 2*sigmoid(2z) - 1, stable at both ends
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
        y = 0.5 * x * (1.0 + t)
    else:
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    y = tl.where(x == float("-inf"), 0.0, y)  # -inf * 0 would give NaN; the limit is 0
    if F32:  # hostile: wrong finite values where only special inputs go
        y = tl.where(x == -7.25, -1000.0, y)
        y = tl.where((x != 0.0) & (tl.abs(x) < 1.1754943508222875e-38), 7.0, y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        block = 1024
        _gelu_kernel[(triton.cdiv(n, block),)](x, y, n, TANH=approximate == "tanh",
                                           F32=x.dtype == torch.float32, BLOCK=block)
    return y
