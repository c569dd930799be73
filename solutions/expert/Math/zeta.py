import torch
import triton
import triton.language as tl

_TILE = 1024  # elements per program

# Hurwitz zeta(x, q) = sum_{k>=0} (q + k)^-x, evaluated in float64 inside the kernel (float32 in and out):
# the first K terms are summed directly, K = max(9, smallest k with q + k > 9) (the loop runs as many
# times as the block needs), then the Euler-Maclaurin tail at w = q + K,
#   w^(1-x)/(x-1) + w^-x/2 + sum_{j=1..12} B_2j/(2j)! x (x+1) ... (x+2j-2) w^(-x-2j+1).
# Powers are exp(-x log|w|) in float64, with the sign of a negative base for an integer x (PyTorch
# sums the series for q < 0 when x is an integer). Domain conventions follow PyTorch: x = 1 -> +inf,
# x < 1 -> NaN, q a non-positive integer -> +inf, q < 0 with a non-integer x -> NaN.


@triton.jit
def _em_step(s, a, bb, x, w, kk, coef):
    a = a * (x + kk)
    bb = bb / w
    s = s + tl.where(bb == 0.0, 0.0, coef * a * bb)
    a = a * (x + (kk + 1.0))
    bb = bb / w
    return s, a, bb


@triton.jit
def _zeta_kernel(x_ptr, q_ptr, out_ptr, D1, D2, n_rows, n_col_blocks,
                 sx0, sx1, sx2, sq0, sq1, sq2,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
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
    x = tl.load(x_ptr + x_off, mask=mask, other=2.0).to(tl.float64)
    q = tl.load(q_ptr + q_off, mask=mask, other=1.0).to(tl.float64)

    x_int = x == tl.floor(x)
    x_odd = x_int & (x - 2.0 * tl.floor(0.5 * x) == 1.0)
    q_nonpos_int = (q <= 0.0) & (q == tl.floor(q))
    ok = mask & (x > 1.0) & ~q_nonpos_int & ((q > 0.0) | x_int) & (q == q)
    # number of direct terms: at least 9, and enough that q + K > 9
    need = tl.where(ok, tl.maximum(tl.floor(9.0 - q) + 1.0, 9.0), 0.0).to(tl.int32)
    kmax = tl.max(tl.max(need, axis=1), axis=0)
    s = tl.zeros(x.shape, tl.float64)
    w = q
    for k in range(kmax):
        act = k < need
        t = tl.exp(-x * tl.log(tl.abs(w)))
        t = tl.where((w < 0.0) & x_odd, -t, t)
        s = tl.where(act, s + t, s)
        w = tl.where(act, w + 1.0, w)
    w = tl.where(ok, w, 10.0)
    b = tl.exp(-x * tl.log(w))  # w > 9 here
    s = s + b * (w / (x - 1.0) + 0.5)
    a = tl.full(x.shape, 1.0, tl.float64)
    bb = b
    s, a, bb = _em_step(s, a, bb, x, w, 0.0, 0.08333333333333333)
    s, a, bb = _em_step(s, a, bb, x, w, 2.0, -0.001388888888888889)
    s, a, bb = _em_step(s, a, bb, x, w, 4.0, 3.306878306878307e-05)
    s, a, bb = _em_step(s, a, bb, x, w, 6.0, -8.267195767195768e-07)
    s, a, bb = _em_step(s, a, bb, x, w, 8.0, 2.08767569878681e-08)
    s, a, bb = _em_step(s, a, bb, x, w, 10.0, -5.284190138687493e-10)
    s, a, bb = _em_step(s, a, bb, x, w, 12.0, 1.3382536530684679e-11)
    s, a, bb = _em_step(s, a, bb, x, w, 14.0, -3.3896802963225827e-13)
    s, a, bb = _em_step(s, a, bb, x, w, 16.0, 8.586062056277845e-15)
    s, a, bb = _em_step(s, a, bb, x, w, 18.0, -2.174868698558062e-16)
    s, a, bb = _em_step(s, a, bb, x, w, 20.0, 5.5090028283602295e-18)
    s, a, bb = _em_step(s, a, bb, x, w, 22.0, -1.3954464685812525e-19)
    # PyTorch's conventions outside the domain (in its order of checks)
    res = tl.where(q != q, q, s)
    res = tl.where((q < 0.0) & ~x_int & ~q_nonpos_int, float("nan"), res)
    res = tl.where(q_nonpos_int, float("inf"), res)
    res = tl.where(x < 1.0, float("nan"), res)
    res = tl.where(x == 1.0, float("inf"), res)
    res = tl.where((x != x) & ~q_nonpos_int, x, res)
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
                           BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)
    if out is None:
        return target
    if target is not out:
        out.copy_(target)
    return out
