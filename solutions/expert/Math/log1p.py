import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _log1p_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32).to(tl.float64)
    # u = 1 + x rounded in float64; log(u) * x / (u - 1) cancels that rounding error exactly to
    # first order (Goldberg), so small |x| keep full relative accuracy down to the subnormals.
    u = 1.0 + x
    d = u - 1.0
    y = tl.log(u) * (x / tl.where(d == 0.0, 1.0, d))
    y = tl.where(d == 0.0, x, y)                      # |x| below float64 resolution: log1p(x) = x (keeps -0.0)
    y = tl.where(x == float("inf"), float("inf"), y)  # inf * inf / inf would be NaN
    tl.store(y_ptr + offs, y.to(tl.float32).to(y_ptr.dtype.element_ty), mask=mask)


def log1p(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _log1p_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
