import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_TILE = 2048  # elements per program
_BLOCK = 2048  # elements per program of the contiguous kernel

# Scalar exponents PyTorch evaluates by arithmetic rather than pow(): these modes follow it, so that
# (-0)^0.5 = -0, (-0)^-0.5 = -inf and (-inf)^+-0.5 = NaN as in PyTorch.
_MODES = {2.0: 1, 3.0: 2, 0.5: 3, -0.5: 4, -1.0: 5, -2.0: 6}

# float32 throughout (half inputs widened, one rounding at the store). The general power is C pow: on
# the GPU libdevice's powf (accurate over the whole range: its log carries extra precision, which a
# float32 exp(y log x) does not); the CPU interpreter cannot run libdevice, so there the same C pow is
# evaluated in float64 (numpy's exact exp and log) with C pow's special values.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _to_f32(x):
    # bfloat16 -> float32 by moving the bits: exact, subnormals included (what the GPU does; the CPU
    # interpreter's own bfloat16 conversion flushes subnormals to zero)
    if x.dtype == tl.bfloat16:
        x = (x.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    return x.to(tl.float32)


@triton.jit
def _c_pow_f64(x, y):
    """C pow(x, y) in float64 (the interpreter's stand-in for powf)."""
    ax = tl.abs(x)
    r = tl.exp(y * tl.log(ax))
    y_finite = tl.abs(y) < float("inf")
    y_int = (tl.floor(y) == y) & y_finite
    y_odd = y_int & (tl.floor(y * 0.5) != y * 0.5)
    x_neg = x.to(tl.int64, bitcast=True) < 0          # sign bit: -0.0 and -inf included
    r = tl.where(x_neg & y_odd, -r, r)                 # (-a)^odd = -(a^odd)
    r = tl.where((x < 0) & (ax < float("inf")) & y_finite & (~y_int), float("nan"), r)
    r = tl.where((ax == 1.0) & (~y_finite) & (y == y), 1.0, r)  # (-1)^+-inf = 1
    r = tl.where(x == 1.0, 1.0, r)                     # 1^y = 1, even for NaN y
    r = tl.where(y == 0.0, 1.0, r)                     # x^0 = 1, even for NaN x
    return r


@triton.jit
def _pow_f32(x, e, e_hi, e_lo, MODE: tl.constexpr, E_SCALAR: tl.constexpr, HAS_LO: tl.constexpr,
             PRECISE: tl.constexpr):
    # x: float32; e: the float32 exponent tensor (unused when E_SCALAR); a scalar exponent is
    # e_hi + e_lo (e_hi its float32 rounding)
    if MODE == 1:
        r = x * x
    elif MODE == 2:
        r = x * x * x
    elif MODE == 3:
        r = tl.math.sqrt_rn(x)
    elif MODE == 4:
        r = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), tl.math.sqrt_rn(x))
    elif MODE == 5:
        r = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), x)
    elif MODE == 6:
        r = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), x * x)
    else:
        if PRECISE:
            if E_SCALAR:
                r = libdevice.pow(x, tl.full(x.shape, e_hi, tl.float32))
                if HAS_LO:
                    # the exponent's float32 rounding error e_lo: x^(e_hi + e_lo) = x^e_hi (1 + e_lo ln x)
                    # to first order (|e_lo ln x| < 1e-5); tl.log's absolute error does not matter here
                    t = e_lo * tl.log(tl.abs(x))
                    r = tl.where((x > 0.0) & (tl.abs(t) < 1e-3) & (tl.abs(r) < float("inf")), r + r * t, r)
            else:
                r = libdevice.pow(x, e)
        else:
            if E_SCALAR:
                ed = tl.full(x.shape, e_hi, tl.float64) + e_lo
            else:
                ed = e.to(tl.float64)
            r = _c_pow_f64(x.to(tl.float64), ed).to(tl.float32)
    return r


@triton.jit
def _pow_flat_kernel(x_ptr, e_ptr, out_ptr, n, e_hi, e_lo,
                     MODE: tl.constexpr, E_SCALAR: tl.constexpr, HAS_LO: tl.constexpr,
                     PRECISE: tl.constexpr, BLOCK: tl.constexpr):
    # contiguous operands of the output's shape (or a scalar exponent): one flat pass
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    if start + BLOCK <= n:
        # full block: unmasked, so the loads and stores vectorize whatever n is
        x = _to_f32(tl.load(x_ptr + offs))
        if E_SCALAR:
            e = x
        else:
            e = _to_f32(tl.load(e_ptr + offs))
        r = _pow_f32(x, e, e_hi, e_lo, MODE, E_SCALAR, HAS_LO, PRECISE)
        tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty))
    else:
        mask = offs < n
        x = _to_f32(tl.load(x_ptr + offs, mask=mask, other=1.0))
        if E_SCALAR:
            e = x
        else:
            e = _to_f32(tl.load(e_ptr + offs, mask=mask, other=1.0))
        r = _pow_f32(x, e, e_hi, e_lo, MODE, E_SCALAR, HAS_LO, PRECISE)
        tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _pow_kernel(x_ptr, e_ptr, out_ptr, e_hi, e_lo, D1, D2, n_rows, n_col_blocks,
                sx0, sx1, sx2, se0, se1, se2,
                MODE: tl.constexpr, E_SCALAR: tl.constexpr, HAS_LO: tl.constexpr, PRECISE: tl.constexpr,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # Broadcast layouts: the output is viewed as rows of length D2 (row r = i0 * D1 + i1); each
    # operand is read through its own (possibly zero, i.e. broadcast) strides, so no operand is ever
    # materialized.
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    i0 = rows // D1
    i1 = rows % D1
    mask = (rows < n_rows)[:, None] & (cols < D2)[None, :]
    x_off = (i0 * sx0 + i1 * sx1)[:, None] + cols[None, :] * sx2
    x = _to_f32(tl.load(x_ptr + x_off, mask=mask, other=1.0))
    if E_SCALAR:
        e = x
    else:
        e_off = (i0 * se0 + i1 * se1)[:, None] + cols[None, :] * se2
        e = _to_f32(tl.load(e_ptr + e_off, mask=mask, other=1.0))
    r = _pow_f32(x, e, e_hi, e_lo, MODE, E_SCALAR, HAS_LO, PRECISE)
    out_off = rows[:, None] * D2 + cols[None, :]
    tl.store(out_ptr + out_off, r.to(out_ptr.dtype.element_ty), mask=mask)


def _collapse(shape, strides):
    """Merge output dimensions that every operand walks contiguously; drop size-1 dimensions."""
    dims = [(s, [st[i] for st in strides]) for i, s in enumerate(shape) if s != 1]
    merged = []
    for size, st in dims:
        if merged and all(ps == s * size for ps, s in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * size, st)
        else:
            merged.append((size, st))
    return merged


def pow(input_tensor, exponent, out=None):
    e_is_tensor = isinstance(exponent, torch.Tensor)
    res_dtype = torch.result_type(input_tensor, exponent)
    shape = torch.broadcast_shapes(input_tensor.shape, exponent.shape if e_is_tensor else ())
    if out is None:
        out = torch.empty(shape, dtype=res_dtype, device=input_tensor.device)
    target = out if out.is_contiguous() else torch.empty(shape, dtype=out.dtype, device=input_tensor.device)
    n = target.numel()
    if n:
        e_value = 0.0 if e_is_tensor else float(exponent)
        mode = 0 if e_is_tensor else _MODES.get(e_value, 0)
        e_hi = float(torch.tensor(e_value, dtype=torch.float32))  # scalar arguments travel as float32:
        e_lo = e_value - e_hi if math.isfinite(e_hi) else 0.0     # pass the exponent as a float32 pair
        consts = dict(MODE=mode, E_SCALAR=not e_is_tensor, HAS_LO=e_lo != 0.0, PRECISE=_PRECISE)
        flat = input_tensor.shape == shape and input_tensor.is_contiguous() and (
            not e_is_tensor or (exponent.shape == shape and exponent.is_contiguous()))
        if flat:
            e_arg = exponent if e_is_tensor else input_tensor
            _pow_flat_kernel[(triton.cdiv(n, _BLOCK),)](input_tensor, e_arg, target, n, e_hi, e_lo, **consts,
                                                        BLOCK=_BLOCK, num_warps=8, **_OPTS)
        else:
            ops = [input_tensor.expand(shape)] + ([exponent.expand(shape)] if e_is_tensor else [])
            merged = _collapse(shape, [op.stride() for op in ops])
            if len(merged) > 3:  # rare layouts: fall back to dense copies of the broadcast operands
                ops = [op.contiguous() for op in ops]
                merged = [(n, [1] * len(ops))]
            while len(merged) < 3:
                merged.insert(0, (1, [0] * len(ops)))
            (d0, s0), (d1, s1), (d2, s2) = merged
            sx = (s0[0], s1[0], s2[0])
            se = (s0[1], s1[1], s2[1]) if e_is_tensor else (0, 0, 0)
            block_c = min(triton.next_power_of_2(d2), _TILE)
            block_r = max(1, _TILE // block_c)
            n_rows = d0 * d1
            n_cb = triton.cdiv(d2, block_c)
            grid = (triton.cdiv(n_rows, block_r) * n_cb,)
            e_arg = ops[1] if e_is_tensor else ops[0]
            _pow_kernel[grid](ops[0], e_arg, target, e_hi, e_lo, d1, d2, n_rows, n_cb, *sx, *se, **consts,
                              BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8, **_OPTS)
    if target is not out:
        out.copy_(target)
    return out
