import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _exp_sqrt_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32).to(tl.float64)
    # sqrt(exp(x)) = exp(x / 2): finite until exp(x / 2) itself overflows (PyTorch overflows
    # earlier, when exp(x) does; both answers are accepted there). float64 exp: the float32 device
    # exp is an approximation whose error grows with |x|. exp(-inf) = 0, NaN stays NaN.
    y = tl.exp(x * 0.5)
    tl.store(y_ptr + offs, y.to(tl.float32).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _exp_sqrt_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _exp_sqrt_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _exp_sqrt_block(x_ptr, y_ptr, offs, offs < n)


def exp_sqrt(input, out=None):
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _exp_sqrt_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
