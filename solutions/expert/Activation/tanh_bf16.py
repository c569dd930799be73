import torch
import triton
import triton.language as tl

_BLOCK = 4096  # elements per program


@triton.jit
def _tanh_f32(x):
    """float32 tanh, accurate to about 1.5 ulp everywhere. |x| < 0.625: x + x*u*q(u), u = x*x, with a
    near-minimax q (keeps full relative accuracy near zero, -0.0 stays -0.0); otherwise
    1 - 2/(exp(2|x|) + 1) with the sign of x (no cancellation there; saturates to +-1, exp of
    +inf gives exactly +-1). NaN fails |x| < 0.625 and propagates through exp."""
    u = x * x
    q = 0.0022958327607654934
    q = q * u - 0.008346971361764554
    q = q * u + 0.021769957349915266
    q = q * u - 0.05395940529873102
    q = q * u + 0.13333304273609725
    q = q * u - 0.3333333317776744
    small = x + x * u * q
    a = tl.abs(x)
    big = 1.0 - 2.0 / (tl.exp(2.0 * a) + 1.0)
    big = tl.where(x < 0, -big, big)
    return tl.where(a < 0.625, small, big)


@triton.jit
def _tanh_block(x_ptr, y_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # float32 math, one rounding on the store
    y = _tanh_f32(x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _tanh_block(x_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _tanh_block(x_ptr, y_ptr, offs, offs < n)


def tanh_bf16(input: torch.Tensor) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _tanh_kernel[(triton.cdiv(n, _BLOCK),)](x, y, n, BLOCK=_BLOCK, num_warps=8)
    return y
