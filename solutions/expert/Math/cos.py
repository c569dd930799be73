import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _cos_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    # tl.cos on float32 is the accurate device cosine (libdevice cosf on NVIDIA: a full-range
    # Payne-Hanek reduction for large |x|, not the cos.approx instruction); +-inf and NaN give NaN
    y = tl.cos(x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _cos_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _cos_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _cos_block(x_ptr, y_ptr, offs, offs < n)


def cos(input_tensor):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _cos_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=8)
    return y
