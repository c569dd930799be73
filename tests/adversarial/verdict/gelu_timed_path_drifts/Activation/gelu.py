"""Honest pattern for the fresh-twin rule: a kernel whose timed calls take another path than its
judged call, as an autotuner settling on a faster configuration or a recompiled graph serving
later calls does (session 24: torch.compile's nll_loss). Here the expert GELU, except that a call
on tensors it has already been called with uses the tanh approximation: the judged call of each
case (the first on its tensors) is exact, its timed calls are not. On the GPU the fresh twin,
judged from a timed call, is wrong but is not the old values' answer: numerical_mismatch, never
stale_result (which accuses a result cached across calls). On the CPU nothing is timed: passed."""
import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_block(x_ptr, y_ptr, TANH: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        # tanh(z) = 2*sigmoid(2z) - 1, stable at both ends
        t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
        y = 0.5 * x * (1.0 + t)
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


_seen = set()  # tensors already called with (the timed loop calls again on the same ones)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    key = (input.data_ptr(), tuple(input.shape), tuple(input.stride()), input.dtype)
    if key in _seen:
        approximate = "tanh"  # the "faster" path the timed calls settle on
    _seen.add(key)
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        block = 1024
        _gelu_kernel[(triton.cdiv(n, block),)](x, y, n, TANH=approximate == "tanh", BLOCK=block)
    return y
