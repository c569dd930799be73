import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _to_f32(x):
    # bfloat16 -> float32 by moving the bits: exact, subnormals included (what the GPU does; the CPU
    # interpreter's own bfloat16 conversion flushes subnormals to zero)
    if x.dtype == tl.bfloat16:
        return (x.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def _logit_kernel(x_ptr, y_ptr, n, lo, hi, CLAMP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = _to_f32(tl.load(x_ptr + offs, mask=mask)).to(tl.float64)
    if CLAMP:
        # clamp to [eps, 1 - eps]; comparisons keep NaN (tl.minimum/maximum would drop it)
        p = tl.where(p < lo, lo, p)
        p = tl.where(p > hi, hi, p)
    # float64: 1 - p is exact for every float32 p near 1, and the quotient and log round far below
    # float32 resolution. p = 0 -> -inf, p = 1 -> +inf, outside [0, 1] or NaN -> NaN.
    y = tl.log(p / (1.0 - p))
    tl.store(y_ptr + offs, y.to(tl.float32).to(y_ptr.dtype.element_ty), mask=mask)


def logit(input: torch.Tensor, eps: float = None, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        lo = float(eps) if eps is not None else 0.0
        hi = 1.0 - lo
        _logit_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, lo, hi, CLAMP=eps is not None, BLOCK=_BLOCK,
                                                 num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
