import torch
import triton
import triton.language as tl

_BLOCK = 4096  # elements per program


@triton.jit
def _leaky_relu_block(x_ptr, y_ptr, slope, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    # NaN > 0 is false and NaN * slope stays NaN; -inf * slope keeps its sign for slope > 0.
    y = tl.where(x > 0, x, x * slope)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _leaky_relu_block(x_ptr, y_ptr, slope, offs, None)
    else:  # the last, partial block
        _leaky_relu_block(x_ptr, y_ptr, slope, offs, offs < n)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    x = input if input.is_contiguous() else input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    if n:
        _leaky_relu_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, float(negative_slope), BLOCK=_BLOCK,
                                                      num_warps=8)
    if inplace:
        if x is not input:  # strided input updated in place: write the dense result back
            input.copy_(x)
        return input
    return y
