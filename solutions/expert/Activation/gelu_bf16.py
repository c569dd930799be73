import torch
import triton
import triton.language as tl

_BLOCK = 4096  # elements per program


@triton.jit
def _gelu_block(x_ptr, y_ptr, TANH: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # float32 math, one rounding on the store
    if TANH:
        # 0.5*x*(1 + tanh(z)) == x * sigmoid(2z) == x / (1 + exp(-2z)): no 1 + tanh cancellation
        # for negative x; x^3 may overflow float32 only for |x| > 7e12, where z = +-inf gives x or -0.
        z2 = 1.5957691216057308 * (x + 0.044715 * x * x * x)  # 2*sqrt(2/pi) * (x + 0.044715 x^3)
        y = x / (1.0 + tl.exp(-z2))
    else:
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    y = tl.where(x == float("-inf"), 0.0, y)  # -inf * 0 would give NaN; the limit is 0
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _gelu_block(x_ptr, y_ptr, TANH, offs, None)
    else:  # the last, partial block
        _gelu_block(x_ptr, y_ptr, TANH, offs, offs < n)


def gelu_bf16(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input if input.is_contiguous() else input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _gelu_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, TANH=approximate == "tanh", BLOCK=_BLOCK,
                                                num_warps=8)
    return y
