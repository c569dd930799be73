import struct

import torch
import triton
import triton.language as tl

_BLOCK = 4096


@triton.jit
def _f64_from_bits(bits):
    return bits.to(tl.int64).to(tl.float64, bitcast=True)


@triton.jit
def _pow2_int(k, F64: tl.constexpr):
    """2^k for an integer-valued k, built from exponent bits (two factors, so that the whole range of
    results, down to the subnormals, is reached and anything beyond over/underflows as it should)."""
    if F64:
        k = tl.minimum(tl.maximum(k, -2100.0), 2100.0).to(tl.int64)
        k1 = k >> 1
        k2 = k - k1
        f1 = ((tl.minimum(tl.maximum(k1, -1022), 1023) + 1023) << 52).to(tl.float64, bitcast=True)
        f2 = ((tl.minimum(tl.maximum(k2, -1022), 1023) + 1023) << 52).to(tl.float64, bitcast=True)
    else:
        k = tl.minimum(tl.maximum(k, -300.0), 300.0).to(tl.int32)
        k1 = k >> 1
        k2 = k - k1
        f1 = ((tl.minimum(tl.maximum(k1, -126), 127) + 127) << 23).to(tl.float32, bitcast=True)
        f2 = ((tl.minimum(tl.maximum(k2, -126), 127) + 127) << 23).to(tl.float32, bitcast=True)
    return f1, f2


@triton.jit
def _exp2_frac_f64(f):
    """2^f for f in [0, 1) in float64 without transcendental intrinsics: Taylor series of e^(f ln 2)
    (f ln 2 < 0.7; 18 terms leave a truncation error below 1e-18)."""
    t = f * 0.6931471805599453
    p = 1.0 / 6402373705728000.0
    p = p * t + 1.0 / 355687428096000.0
    p = p * t + 1.0 / 20922789888000.0
    p = p * t + 1.0 / 1307674368000.0
    p = p * t + 1.0 / 87178291200.0
    p = p * t + 1.0 / 6227020800.0
    p = p * t + 1.0 / 479001600.0
    p = p * t + 1.0 / 39916800.0
    p = p * t + 1.0 / 3628800.0
    p = p * t + 1.0 / 362880.0
    p = p * t + 1.0 / 40320.0
    p = p * t + 1.0 / 5040.0
    p = p * t + 1.0 / 720.0
    p = p * t + 1.0 / 120.0
    p = p * t + 1.0 / 24.0
    p = p * t + 1.0 / 6.0
    p = p * t + 0.5
    p = p * t + 1.0
    p = p * t + 1.0
    return p


@triton.jit(do_not_specialize=["start_bits", "end_bits", "step_bits", "l_hi_bits", "l_lo_bits"])
def _logspace_kernel(out_ptr, steps, halfway, start_bits, end_bits, step_bits, l_hi_bits, l_lo_bits,
                     F64: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = base^e_i = 2^(e_i * log2(base)). The exponent is formed in float64 from both ends, as torch
    does: e_i = start + i*step in the first half, end - (steps-1-i)*step in the second. x = e * log2(base) is
    kept as a double-double (an FMA gives the product's rounding error, plus e times the low part of
    log2(base)), then 2^x = 2^k * 2^f (k integer): 2^f in float32 with its low part as a first-order
    correction for float32/16 outputs, by a float64 series for float64."""
    start = _f64_from_bits(start_bits)
    end = _f64_from_bits(end_bits)
    step = _f64_from_bits(step_bits)
    l_hi = _f64_from_bits(l_hi_bits)
    l_lo = _f64_from_bits(l_lo_bits)
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    e = tl.where(i < halfway, start + i.to(tl.float64) * step, end - (steps - 1 - i).to(tl.float64) * step)
    x = e * l_hi
    x_lo = tl.fma(e, l_hi, -x) + e * l_lo
    k = tl.floor(x)
    f = (x - k) + x_lo  # x - k is exact; f in [0, 1) up to the tiny x_lo
    if F64:
        p = _exp2_frac_f64(f)
        s1, s2 = _pow2_int(k, True)
        y = (p * s1) * s2
    else:
        f_hi = f.to(tl.float32)
        f_lo = (f - f_hi.to(tl.float64)).to(tl.float32)
        p = tl.exp2(f_hi)
        p = p + p * (f_lo * 0.6931471805599453)
        s1, s2 = _pow2_int(k.to(tl.float32), False)
        y = (p * s1) * s2
    y = y.to(out_ptr.dtype.element_ty)
    if (tl.program_id(0).to(tl.int64) + 1) * BLOCK <= steps:  # a full block: unmasked, vectorized store
        tl.store(out_ptr + i, y)
    else:  # the last, partial block
        tl.store(out_ptr + i, y, mask=i < steps)


def _bits(x):
    """A Python float as the int64 bit pattern of its double (Triton passes float arguments as float32)."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def _log2_dd(base):
    """log2(base) as a double-double (hi + lo), from a high-precision logarithm of the double base."""
    from decimal import Decimal, getcontext
    getcontext().prec = 40
    exact = Decimal(base).ln() / Decimal(2).ln()
    hi = float(exact)
    lo = float(exact - Decimal(hi))
    return hi, lo


def logspace(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
    start = start.item() if isinstance(start, torch.Tensor) else start
    end = end.item() if isinstance(end, torch.Tensor) else end
    if dtype is None:
        dtype = torch.get_default_dtype()
    if layout != torch.strided:
        raise ValueError("logspace: only the strided layout is supported")
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    out = torch.empty(steps, dtype=dtype, device=device)
    if steps:
        f64 = dtype == torch.float64 or not dtype.is_floating_point  # integers: computed in double, truncated
        start, end = float(start), float(end)
        if steps == 1:
            end = start
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        l_hi, l_lo = _log2_dd(float(base))
        _logspace_kernel[(triton.cdiv(steps, _BLOCK),)](
            out, steps, steps // 2, _bits(start), _bits(end), _bits(step), _bits(l_hi), _bits(l_lo),
            F64=f64, BLOCK=_BLOCK, num_warps=8)
    if requires_grad:
        out.requires_grad_(True)
    return out
