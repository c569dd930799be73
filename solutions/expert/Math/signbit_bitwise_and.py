import torch
import triton
import triton.language as tl

_BLOCK = 4096

_INT_OF = {torch.float32: tl.int32, torch.float16: tl.int16, torch.bfloat16: tl.int16, torch.float64: tl.int64}


@triton.jit
def _signbit_and_block(x_ptr, m_ptr, sign_ptr, and_ptr, BITS: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    # sign bit through a same-width signed integer: -0.0 gives True, +0.0 False
    tl.store(sign_ptr + offs, x.to(BITS, bitcast=True) < 0, mask=mask)
    # float -> int8 truncates towards zero (inputs stay inside the int8 range)
    xi = x.to(tl.float32).to(tl.int8)
    tl.store(and_ptr + offs, xi & m.to(tl.int8), mask=mask)


@triton.jit
def _signbit_and_kernel(x_ptr, m_ptr, sign_ptr, and_ptr, n, BITS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _signbit_and_block(x_ptr, m_ptr, sign_ptr, and_ptr, BITS, offs, None)
    else:  # the last, partial block
        _signbit_and_block(x_ptr, m_ptr, sign_ptr, and_ptr, BITS, offs, offs < n)


def signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor):
    x = input if input.is_contiguous() else input.contiguous()
    m = other.expand(x.shape)
    m = m if m.is_contiguous() else m.contiguous()
    sign = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    anded = torch.empty(x.shape, dtype=torch.int8, device=x.device)
    n = x.numel()
    if n:
        _signbit_and_kernel[(triton.cdiv(n, _BLOCK),)](x, m, sign, anded, n, BITS=_INT_OF[x.dtype],
                                                       BLOCK=_BLOCK, num_warps=8)
    return sign, anded
