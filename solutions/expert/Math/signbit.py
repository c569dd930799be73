import torch
import triton
import triton.language as tl

_BLOCK = 4096

_INT_OF = {torch.float32: tl.int32, torch.float16: tl.int16, torch.bfloat16: tl.int16, torch.float64: tl.int64}


@triton.jit
def _signbit_block(x_ptr, y_ptr, IS_FLOAT: tl.constexpr, BITS: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask)
    if IS_FLOAT:
        # the sign bit itself, read through a same-width signed integer: -0.0 and -NaN give True
        y = x.to(BITS, bitcast=True) < 0
    else:
        y = x < 0
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def _signbit_kernel(x_ptr, y_ptr, n, IS_FLOAT: tl.constexpr, BITS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _signbit_block(x_ptr, y_ptr, IS_FLOAT, BITS, offs, None)
    else:  # the last, partial block
        _signbit_block(x_ptr, y_ptr, IS_FLOAT, BITS, offs, offs < n)


def signbit(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n = x.numel()
    if n:
        is_float = x.dtype.is_floating_point
        _signbit_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, IS_FLOAT=is_float,
                                                   BITS=_INT_OF[x.dtype] if is_float else tl.int32,
                                                   BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
