import torch
import triton
import triton.language as tl

_BLOCK = 4096


@triton.jit
def _trunc_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # exact for half inputs
    # towards zero: ceil below zero (ceil(-0.5) = -0.0 keeps the sign), floor above; integers,
    # +-inf and NaN pass through unchanged
    y = tl.where(x < 0, tl.ceil(x), tl.floor(x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _trunc_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _trunc_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _trunc_block(x_ptr, y_ptr, offs, offs < n)


def trunc(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _trunc_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
