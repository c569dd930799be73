"""Honest but narrow: a float32-only GELU written for KernelBenchX's own test, which only calls it in
float32 on normal values. Other dtypes raise. Expected: passes level kbx, fails core and strict
(runtime_error: the first case that fails at either level raises).
It halves x before multiplying by 1 + erf: x * (1 + erf) first overflows at +-FLT_MAX in float32
(inf where GELU is finite). Written that way, the candidate failed special_f32 under Triton 3.9's
interpreter (PyPI, 2026-12-04) and passed it under the earlier installs CI had used, so its
strict verdict hung on the Triton version."""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if TANH:
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        t = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0
        y = (0.5 * x) * (1.0 + t)
    else:
        y = (0.5 * x) * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if input.dtype != torch.float32:
        raise TypeError(f"gelu: only float32 is supported, got {input.dtype}")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, TANH=approximate == "tanh", BLOCK=1024)
    return y
