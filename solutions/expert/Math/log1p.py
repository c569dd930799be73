import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_BLOCK = 2048

# float32 throughout (half inputs widened, one rounding at the store), one pass over memory.
# On the GPU the element function is libdevice's log1pf (full relative accuracy down to the
# subnormals, log1p(-1) = -inf, x < -1 -> NaN, +inf -> +inf, sign of zero kept); tl.log there is the
# approximate lg2.approx form. The CPU interpreter cannot run libdevice, so there the same function
# is built from tl.log (numpy's float32 log, accurate) by Goldberg's correction.
_PRECISE = not triton.knobs.runtime.interpret
# libdevice built without flush-to-zero: subnormal arguments and results are kept
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
def _log1p(x, PRECISE: tl.constexpr):
    if PRECISE:
        return libdevice.log1p(x)
    else:
        # u = 1 + x rounded; log(u) * x / (u - 1) cancels that rounding to first order (Goldberg)
        u = 1.0 + x
        d = u - 1.0
        y = tl.log(u) * (x / tl.where(d == 0.0, 1.0, d))
        y = tl.where(d == 0.0, x, y)                      # |x| < 2^-24: log1p(x) = x (keeps -0.0)
        return tl.where(x == float("inf"), x, y)          # inf * inf / inf would be NaN


@triton.jit
def _log1p_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, PRECISE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        y = _log1p(_to_f32(tl.load(x_ptr + offs)), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
    else:
        mask = offs < n
        y = _log1p(_to_f32(tl.load(x_ptr + offs, mask=mask, other=0.0)), PRECISE)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def log1p(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _log1p_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, BLOCK=_BLOCK, PRECISE=_PRECISE,
                                                 num_warps=8, **_OPTS)
    if dst is not out:
        out.copy_(dst)
    return out
