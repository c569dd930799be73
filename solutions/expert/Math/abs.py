import torch
import triton
import triton.language as tl

_BLOCK = 4096

_BITS = {torch.float32: (tl.int32, 0x7FFFFFFF), torch.float16: (tl.int16, 0x7FFF),
         torch.bfloat16: (tl.int16, 0x7FFF), torch.float64: (tl.int64, 0x7FFFFFFFFFFFFFFF)}


@triton.jit
def _abs_block(x_ptr, y_ptr, MAGNITUDE: tl.constexpr, IS_FLOAT: tl.constexpr, BITS: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask)
    if IS_FLOAT:
        # clear the sign bit: exact for every value, -0.0 -> +0.0, NaN stays NaN
        y = (x.to(BITS, bitcast=True) & MAGNITUDE).to(x.dtype, bitcast=True)
    else:
        y = tl.where(x < 0, -x, x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def _abs_kernel(x_ptr, y_ptr, n, MAGNITUDE: tl.constexpr, IS_FLOAT: tl.constexpr, BITS: tl.constexpr,
                BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _abs_block(x_ptr, y_ptr, MAGNITUDE, IS_FLOAT, BITS, offs, None)
    else:  # the last, partial block
        _abs_block(x_ptr, y_ptr, MAGNITUDE, IS_FLOAT, BITS, offs, offs < n)


def abs(input_tensor, out=None):
    x = input_tensor if input_tensor.is_contiguous() else input_tensor.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        is_float = x.dtype.is_floating_point
        bits, magnitude = _BITS[x.dtype] if is_float else (tl.int32, 0)
        _abs_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, MAGNITUDE=magnitude, IS_FLOAT=is_float, BITS=bits,
                                               BLOCK=_BLOCK, num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
