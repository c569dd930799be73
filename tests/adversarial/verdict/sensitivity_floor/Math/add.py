"""Attack on the sensitivity floor (the reference's measure of how far a small result moves when its
inputs move by a rounding, which raises the judge's allowance): exact everywhere except zero-dim
results, whose operands it reads as bfloat16 (half the bytes), an error of 2^-9 of the operands,
thousands of times what a rounding of float32 inputs moves the result."""
import torch
import triton
import triton.language as tl


@triton.jit
def _axpy(x_ptr, y_ptr, out_ptr, alpha, n, NARROW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    x = tl.load(x_ptr + offs, mask=live)
    y = tl.load(y_ptr + offs, mask=live)
    if NARROW:
        x = x.to(tl.bfloat16)
        y = y.to(tl.bfloat16)
    total = x.to(tl.float32) + alpha * y.to(tl.float32)
    tl.store(out_ptr + offs, total.to(out_ptr.dtype.element_ty), mask=live)


def add(input, other, alpha=1, out=None):
    dtype = torch.result_type(input, other)
    if not isinstance(other, torch.Tensor):
        other = torch.tensor(other, dtype=dtype, device=input.device)
    shape = torch.broadcast_shapes(input.shape, other.shape)
    x = input.expand(shape).to(dtype).contiguous()
    y = other.expand(shape).to(dtype).contiguous()
    result = torch.empty(shape, dtype=dtype, device=input.device)
    n = result.numel()
    if n:
        block = 1024
        _axpy[(triton.cdiv(n, block),)](x, y, result, float(alpha), n, NARROW=len(shape) == 0,
                                        BLOCK=block)
    if out is None:
        return result
    out.copy_(result)
    return out
