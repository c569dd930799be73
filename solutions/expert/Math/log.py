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
def _log_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # float64 logarithm: float32 subnormals are normal numbers there (the float32 device log flushes
    # them to zero), and one rounding at the store; log(+-0) = -inf, negative and NaN give NaN
    x = _to_f32(tl.load(x_ptr + offs, mask=mask)).to(tl.float64)
    y = tl.log(x)
    tl.store(y_ptr + offs, y.to(tl.float32).to(y_ptr.dtype.element_ty), mask=mask)


def log(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _log_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
