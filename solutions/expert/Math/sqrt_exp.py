import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _sqrt_exp_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32).to(tl.float64)
    # exp(sqrt(x)) in float64 (IEEE sqrt, accurate exp), one rounding at the store: negative and NaN
    # give NaN, sqrt(-0.0) = -0.0 gives 1, +inf gives +inf, large x overflow to +inf at the store
    y = tl.exp(tl.sqrt(x))
    tl.store(y_ptr + offs, y.to(tl.float32).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sqrt_exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _sqrt_exp_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _sqrt_exp_block(x_ptr, y_ptr, offs, offs < n)


def sqrt_exp(input, out=None):
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _sqrt_exp_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
