import torch
import triton
import triton.language as tl

_BLOCK = 4096


@triton.jit
def _rad2deg_sqrt_block(x_ptr, deg_ptr, sqrt_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    # x * (180 / pi) with the constant in float64, rounded once (overflows to +-inf near the max)
    deg = x.to(tl.float64) * 57.29577951308232
    tl.store(deg_ptr + offs, deg.to(tl.float32).to(deg_ptr.dtype.element_ty), mask=mask)
    # IEEE square root: NaN below zero, sqrt(-0.0) = -0.0
    tl.store(sqrt_ptr + offs, tl.sqrt_rn(x).to(sqrt_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rad2deg_sqrt_kernel(x_ptr, deg_ptr, sqrt_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _rad2deg_sqrt_block(x_ptr, deg_ptr, sqrt_ptr, offs, None)
    else:  # the last, partial block
        _rad2deg_sqrt_block(x_ptr, deg_ptr, sqrt_ptr, offs, offs < n)


def rad2deg_sqrt(input: torch.Tensor):
    x = input if input.is_contiguous() else input.contiguous()
    deg = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    root = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _rad2deg_sqrt_kernel[(triton.cdiv(n, _BLOCK),)](x, deg, root, n, BLOCK=_BLOCK, num_warps=8)
    return deg, root
