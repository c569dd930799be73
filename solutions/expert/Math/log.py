import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# float32 throughout (half inputs widened, one rounding at the store), one pass over memory.
# On the GPU the logarithm is libdevice's logf (under 1 ulp); tl.log there is the approximate
# lg2.approx form (2^-22 absolute error, so no relative accuracy near 1). The CPU interpreter cannot run
# libdevice and computes tl.log exactly with numpy, so it takes tl.log: the same algorithm, only the
# library call differs.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _to_f32(x):
    # bfloat16 -> float32 by moving the bits: exact, subnormals included (the CPU interpreter's own
    # conversion flushes bfloat16 subnormals)
    if x.dtype == tl.bfloat16:
        return (x.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def _log_f32(x, PRECISE: tl.constexpr):
    # A positive subnormal x = m * 2^-149 (m its integer mantissa) is taken as log(m) - 149 ln 2, with m
    # converted exactly to float32: the result never depends on a flushed argument.
    # log(+-0) = -inf, log(+inf) = +inf, negative inputs, -inf and NaN give NaN (from the log itself).
    bits = x.to(tl.int32, bitcast=True)
    sub = (bits > 0) & (bits < 0x00800000)
    arg = tl.where(sub, bits.to(tl.float32), x)
    if PRECISE:
        y = libdevice.log(arg)
    else:
        y = tl.log(arg)
    # 149 ln 2 = 103.2789306640625 (exact in float32) - 7.606306488968324e-07
    return tl.where(sub, (y - 103.2789306640625) + 7.606306488968324e-07, y)


@triton.jit
def _log_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _log_f32(_to_f32(tl.load(x_ptr + offs)), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _log_f32(_to_f32(tl.load(x_ptr + offs, mask=mask, other=1.0)), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def log(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _log_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, PRECISE=_PRECISE,
                                               num_warps=8, **_OPTS)
    if dst is not out:
        out.copy_(dst)
    return out
