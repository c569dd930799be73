import torch
import triton
import triton.language as tl

_BLOCK = 4096  # elements per program (int8: 4 KiB in, 4 KiB out)


@triton.jit
def _gelu_int8_block(x_ptr, y_ptr, TANH: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if TANH:
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        # tanh(|z|) = 1 - 2/(exp(2|z|) + 1): for x >= 6 the correction is below half an ulp of 1,
        # so t rounds to exactly 1 and the product 0.5*x*2 is exactly x, whatever the rounding of
        # the exp and the division (the truncation below needs the exact value there).
        t = 1.0 - 2.0 / (tl.exp(2.0 * tl.abs(z)) + 1.0)
        t = tl.where(z < 0, -t, t)
    else:
        t = tl.erf(x * 0.7071067811865476)
    y = 0.5 * x * (1.0 + t)
    # float -> int8 conversion truncates toward zero; GELU's range on int8 inputs is (-0.17, 127].
    tl.store(y_ptr + offs, y.to(tl.int8), mask=mask)


@triton.jit
def _gelu_int8_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _gelu_int8_block(x_ptr, y_ptr, TANH, offs, None)
    else:  # the last, partial block
        _gelu_int8_block(x_ptr, y_ptr, TANH, offs, offs < n)


def gelu_int8(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input if input.is_contiguous() else input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _gelu_int8_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, TANH=approximate == "tanh", BLOCK=_BLOCK,
                                                     num_warps=8)
    return y
