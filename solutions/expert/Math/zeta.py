import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

_TILE = 1024  # elements per program
_KCAP = 64    # most direct terms (never reached in practice: the stopping test or an underflow ends sooner)

# Hurwitz zeta(x, q) = sum_{k>=0} (q + k)^-x in float32 (no float64 on the GPU):
#   direct terms p_k = (q + k)^-x, k = 0, 1, ..., each element stopping at the first w = q + k where the
#   Euler-Maclaurin tail with J = 10 correction terms,
#       T(w) = w^(1-x)/(x-1) + w^-x/2 + sum_{j=1..10} B_2j/(2j)! x (x+1) ... (x+2j-2) w^(-x-2j+1),
#   is accurate to 2^-27 of the sum: the remainder of that (for w^-x, completely monotone) alternating
#   expansion is below its first omitted term, |B_22|/22! (x)_21 w^(-x-21); the test is made on log2
#   sizes (fast approximate log2, with (x)_21 <= (x+10)^21 by Jensen: conservative). So an element that
#   its first terms dominate (small q) stops early, and one with a large q starts the tail at once; the
#   loop runs until the block's last element stops (3 direct terms for the random cases, against
#   PyTorch's fixed 9 or more). p_k = w^-x is powf (libdevice on the GPU: its extra-precise log keeps
#   the large powers accurate, which a float32 exp(-x log w) would not); the CPU interpreter cannot
#   run libdevice, so there the same power is exp(-x log|w|) in float64 (numpy, exact), with the sign
#   of a negative base for an integer x (PyTorch sums the series for q < 0 when x is an integer).
# Domain conventions follow PyTorch: x = 1 -> +inf, x < 1 -> NaN, q a non-positive integer -> +inf,
# q < 0 with a non-integer x -> NaN.
_PRECISE = not triton.knobs.runtime.interpret
_OPTS = {"enable_reflect_ftz": False} if _PRECISE else {}


@triton.jit
def _pow_neg(w, x, PRECISE: tl.constexpr):
    # w^-x (C pow), float32
    if PRECISE:
        return libdevice.pow(w, -x)
    else:
        wd = w.to(tl.float64)
        xd = x.to(tl.float64)
        t = tl.exp(-xd * tl.log(tl.abs(wd)))
        x_odd = (xd == tl.floor(xd)) & (xd - 2.0 * tl.floor(0.5 * xd) == 1.0)
        t = tl.where((wd < 0.0) & x_odd, -t, t)
        return t.to(tl.float32)


@triton.jit
def _log2_approx(v, PRECISE: tl.constexpr):
    # only for the stopping test, where 2^-22 does not matter
    return tl.log2(v)


@triton.jit
def _zeta_f32(x, q, KCAP: tl.constexpr, PRECISE: tl.constexpr):
    x_int = x == tl.floor(x)
    q_nonpos_int = (q <= 0.0) & (q == tl.floor(q))
    ok = (x > 1.0) & ~q_nonpos_int & ((q > 0.0) | x_int) & (q == q)
    # log2 of |B_22|/22! (x)_21 <= (x+10)^21 |B_22|/22!
    lk = -57.332914504379694 + 21.0 * _log2_approx(x + 10.0, PRECISE)
    s = tl.zeros(x.shape, tl.float32)
    wf = tl.full(x.shape, 10.0, tl.float32)
    pf = tl.zeros(x.shape, tl.float32)
    em_ok = tl.zeros(x.shape, tl.int1)
    done = ~ok
    k = 0
    while tl.max(tl.max((~done).to(tl.int32), axis=1), axis=0) > 0:
        w = q + k
        p = _pow_neg(w, x, PRECISE)
        lw = _log2_approx(w, PRECISE)
        # log2 of the first omitted term against 2^-27 of the larger of the sum so far and the tail's
        # leading term w^-x (w/(x-1) + 1/2); sizes as logs, so that nothing overflows or underflows
        # (a negative w, for q < 0, gives NaN: no stop)
        size = tl.maximum(_log2_approx(tl.abs(s), PRECISE),
                          _log2_approx(w / (x - 1.0) + 0.5, PRECISE) - x * lw)
        crit = (lk - (x + 21.0) * lw) <= (size - 27.0)
        stop = crit | (tl.abs(p) == float("inf")) | (k >= KCAP)
        new = stop & ~done
        wf = tl.where(new, w, wf)
        pf = tl.where(new, p, pf)
        em_ok = tl.where(new, crit, em_ok)
        s = tl.where(done | new, s, s + p)
        done = done | stop
        k += 1
    # Euler-Maclaurin tail at wf: wf^(1-x) [1/(x-1) + r/2 + r sum_j B_2j/(2j)! (x)_(2j-1) r^(2j-1)], r = 1/wf
    r = 1.0 / wf  # r enters only the correction terms: the approximate GPU division is enough
    u = x * r
    em = 0.08333333333333333 * u
    u = u * ((x + 1.0) * r) * ((x + 2.0) * r)
    em += -0.001388888888888889 * u
    u = u * ((x + 3.0) * r) * ((x + 4.0) * r)
    em += 3.306878306878307e-05 * u
    u = u * ((x + 5.0) * r) * ((x + 6.0) * r)
    em += -8.267195767195768e-07 * u
    u = u * ((x + 7.0) * r) * ((x + 8.0) * r)
    em += 2.08767569878681e-08 * u
    u = u * ((x + 9.0) * r) * ((x + 10.0) * r)
    em += -5.284190138687493e-10 * u
    u = u * ((x + 11.0) * r) * ((x + 12.0) * r)
    em += 1.3382536530684679e-11 * u
    u = u * ((x + 13.0) * r) * ((x + 14.0) * r)
    em += -3.3896802963225827e-13 * u
    u = u * ((x + 15.0) * r) * ((x + 16.0) * r)
    em += 8.586062056277845e-15 * u
    u = u * ((x + 17.0) * r) * ((x + 18.0) * r)
    em += -2.174868698558062e-16 * u
    lead = pf * wf  # wf^(1-x)
    tiny = (tl.abs(pf) < 1e-30) & ok
    if tl.max(tl.max(tiny.to(tl.int32), axis=1), axis=0) > 0:
        # wf^-x (nearly) underflowed while wf^(1-x) may not have (huge q): take wf^(1-x) directly
        lead = tl.where(tiny, _pow_neg(wf, x - 1.0, PRECISE), lead)
    inv_xm1 = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), x - 1.0)
    tail = lead * (inv_xm1 + r * (0.5 + em))
    tail = tl.where((lead == 0.0) | ~em_ok, 0.0, tail)  # underflowed (or, past KCAP terms, no valid tail)
    res = tl.where(tl.abs(pf) == float("inf"), pf, s + tail)    # a term overflowed: +inf (or -inf)
    # PyTorch's conventions outside the domain (in its order of checks)
    res = tl.where(q != q, q, res)
    res = tl.where((q < 0.0) & ~x_int & ~q_nonpos_int, float("nan"), res)
    res = tl.where(q_nonpos_int, float("inf"), res)
    res = tl.where(x < 1.0, float("nan"), res)
    res = tl.where(x == 1.0, float("inf"), res)
    res = tl.where((x != x) & ~q_nonpos_int, x, res)
    return res


@triton.jit
def _zeta_kernel(x_ptr, q_ptr, out_ptr, D1, D2, n_rows, n_col_blocks,
                 sx0, sx1, sx2, sq0, sq1, sq2,
                 KCAP: tl.constexpr, PRECISE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # The output is viewed as rows of length D2 (row r = i0 * D1 + i1); each operand is read through
    # its own (possibly zero, i.e. broadcast) strides.
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    i0 = rows // D1
    i1 = rows % D1
    mask = (rows < n_rows)[:, None] & (cols < D2)[None, :]
    x_off = (i0 * sx0 + i1 * sx1)[:, None] + cols[None, :] * sx2
    q_off = (i0 * sq0 + i1 * sq1)[:, None] + cols[None, :] * sq2
    x = tl.load(x_ptr + x_off, mask=mask, other=2.0).to(tl.float32)
    q = tl.load(q_ptr + q_off, mask=mask, other=1.0).to(tl.float32)
    res = _zeta_f32(x, q, KCAP, PRECISE)
    out_off = rows[:, None] * D2 + cols[None, :]
    tl.store(out_ptr + out_off, res.to(out_ptr.dtype.element_ty), mask=mask)


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


def zeta(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    shape = torch.broadcast_shapes(input.shape, other.shape)
    res_dtype = torch.result_type(input, other)
    if out is None:
        out = None
        target = torch.empty(shape, dtype=res_dtype, device=input.device)
    else:
        target = out if out.is_contiguous() else torch.empty(shape, dtype=out.dtype, device=input.device)
    n = target.numel()
    if n:
        ops = [input.expand(shape), other.expand(shape)]
        merged = _collapse(shape, [op.stride() for op in ops])
        if len(merged) > 3:  # rare layouts: dense copies of the broadcast operands
            ops = [op.contiguous() for op in ops]
            merged = [(n, [1, 1])]
        while len(merged) < 3:
            merged.insert(0, (1, [0, 0]))
        (d0, s0), (d1, s1), (d2, s2) = merged
        block_c = min(triton.next_power_of_2(d2), _TILE)
        block_r = max(1, _TILE // block_c)
        n_rows = d0 * d1
        n_cb = triton.cdiv(d2, block_c)
        grid = (triton.cdiv(n_rows, block_r) * n_cb,)
        _zeta_kernel[grid](ops[0], ops[1], target, d1, d2, n_rows, n_cb,
                           s0[0], s1[0], s2[0], s0[1], s1[1], s2[1],
                           KCAP=_KCAP, PRECISE=_PRECISE, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4, **_OPTS)
    if out is None:
        return target
    if target is not out:
        out.copy_(target)
    return out
