import torch
import triton
import triton.language as tl

_TILE = 1024  # elements per program


@triton.jit
def _stirling_tail(k):
    """log(k!) minus its Stirling approximation: a table below 10, the series above (as PyTorch)."""
    kp1 = k + 1.0
    kp1sq = kp1 * kp1
    t = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / kp1
    t = tl.where(k == 9, 0.00833056343336287, t)
    t = tl.where(k == 8, 0.00925546218271273, t)
    t = tl.where(k == 7, 0.0104112652619720, t)
    t = tl.where(k == 6, 0.0118967099458917, t)
    t = tl.where(k == 5, 0.0138761288230707, t)
    t = tl.where(k == 4, 0.0166446911898211, t)
    t = tl.where(k == 3, 0.02079067210376509, t)
    t = tl.where(k == 2, 0.0276779256849983, t)
    t = tl.where(k == 1, 0.0413406959554092, t)
    t = tl.where(k == 0, 0.0810614667953272, t)
    return t


@triton.jit
def _binomial_kernel(n_ptr, p_ptr, out_ptr, seed, D1, D2, n_rows, n_col_blocks,
                     sn0, sn1, sn2, sp0, sp1, sp2,
                     LOGITS: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # The output is viewed as rows of length D2 (row r = i0 * D1 + i1); total_count and p are read
    # through their own (possibly zero, i.e. broadcast) strides.
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    i0 = rows // D1
    i1 = rows % D1
    mask = (rows < n_rows)[:, None] & (cols < D2)[None, :]
    n_off = (i0 * sn0 + i1 * sn1)[:, None] + cols[None, :] * sn2
    p_off = (i0 * sp0 + i1 * sp1)[:, None] + cols[None, :] * sp2
    out_off = rows[:, None] * D2 + cols[None, :]
    count = tl.load(n_ptr + n_off, mask=mask, other=0.0).to(tl.float32)
    p = tl.load(p_ptr + p_off, mask=mask, other=0.0).to(tl.float32)
    if LOGITS:
        p = 1.0 / (1.0 + tl.exp(-p))  # sigmoid: logits of -inf / +inf give p = 0 / 1 exactly

    # PyTorch's sampler: draw Binomial(count, q) with q = min(p, 1 - p) (a draw for 1 - p is
    # count minus one for p); BTRS (Hormann's transformed rejection) where count * q >= 10, else
    # inversion by summing geometric waiting times. Every element runs its own rejection loop.
    flip = p > 0.5
    q = tl.where(flip, 1.0 - p, p)
    done = (count <= 0) | (q <= 0) | (~mask)
    use_btrs = count * q >= 10.0
    # inversion state
    log1mq = tl.log(1.0 - q.to(tl.float64)).to(tl.float32)  # 1 - q exact in float64
    geom_sum = tl.zeros_like(q)
    num_geom = tl.zeros_like(q)
    # BTRS constants
    stddev = tl.sqrt_rn(count * q * (1.0 - q))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = count * q + 0.5
    v_r = 0.92 - 4.2 / b
    r = q / (1.0 - q)
    alpha = (2.83 + 5.1 / b) * stddev
    m = tl.floor((count + 1.0) * q)
    tail_m = _stirling_tail(m) + _stirling_tail(count - m)
    head = (m + 0.5) * tl.log((m + 1.0) / (r * (count - m + 1.0)))

    result = tl.zeros_like(q)
    it = 0
    pending = tl.sum((~done).to(tl.int32))
    while pending > 0:
        # a fresh Philox stream per round, one counter per output element
        u1, u2, u3, _ = tl.rand4x(seed + it, out_off)
        # inversion round: one more geometric waiting time
        geom = tl.ceil(tl.log(u3) / log1mq)
        inv = (~done) & (~use_btrs)
        new_sum = geom_sum + geom
        inv_stop = inv & (new_sum > count)
        result = tl.where(inv_stop, num_geom, result)
        num_geom = tl.where(inv & (~inv_stop), num_geom + 1.0, num_geom)
        geom_sum = tl.where(inv, new_sum, geom_sum)
        # BTRS round
        U = u1 - 0.5
        V = u2
        us = 0.5 - tl.abs(U)
        k = tl.floor((2.0 * a / us + b) * U + c)
        valid = (k >= 0) & (k <= count)
        quick = (us >= 0.07) & (V <= v_r)
        lv = tl.log(V * alpha / (a / (us * us) + b))
        upper = (head + (count + 1.0) * tl.log((count - m + 1.0) / (count - k + 1.0))
                 + (k + 0.5) * tl.log(r * (count - k + 1.0) / (k + 1.0))
                 + tail_m - _stirling_tail(k) - _stirling_tail(count - k))
        bt_stop = (~done) & use_btrs & valid & (quick | (lv <= upper))
        result = tl.where(bt_stop, k, result)
        done = done | inv_stop | bt_stop
        it += 1
        pending = tl.sum((~done).to(tl.int32))
    result = tl.where(flip, count - result, result)
    result = tl.where(count <= 0, 0.0, result)
    tl.store(out_ptr + out_off, result.to(out_ptr.dtype.element_ty), mask=mask)


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


def bitwise_and_binomial(input: torch.Tensor, other: torch.Tensor, total_count: torch.Tensor,
                         probs: torch.Tensor = None, logits: torch.Tensor = None) -> torch.Tensor:
    # input & other is computed but unused by the original function: it is not computed here.
    if probs is None and logits is None:
        raise ValueError("Either `probs` or `logits` must be provided for Binomial distribution.")
    source = probs if probs is not None else logits
    shape = torch.broadcast_shapes(total_count.shape, source.shape)
    out = torch.empty(shape, dtype=source.dtype, device=source.device)
    n = out.numel()
    if n:
        # the seed comes from PyTorch's (CPU) generator, so torch.manual_seed governs the draw
        seed = int(torch.randint(0, 2 ** 31 - 1, (), device="cpu").item())
        ops = [total_count.expand(shape), source.expand(shape)]
        merged = _collapse(shape, [op.stride() for op in ops])
        if len(merged) > 3:  # rare layouts: fall back to dense copies of the broadcast operands
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
        _binomial_kernel[grid](ops[0], ops[1], out, seed, d1, d2, n_rows, n_cb,
                               s0[0], s1[0], s2[0], s0[1], s1[1], s2[1],
                               LOGITS=probs is None, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)
    return out
