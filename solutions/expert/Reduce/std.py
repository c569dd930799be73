import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024   # enough programs to fill an H200 (132 SMs) several times over


@triton.jit
def _std_kernel(x_ptr, ic_ptr, im_ptr, iq_ptr, oc_ptr, om_ptr, oq_ptr, y_ptr,
                L, inner, chunk, n_splits, n_inner_blocks, correction,
                HAS_STATE: tl.constexpr, FINAL: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Reduce an (outer, L, inner) tensor over L, rows [split*chunk, (split+1)*chunk), to the state
    (count, mean, M2) of each column, merging blocks with Chan's parallel formula (stable in float32).

    The input is raw data, or (HAS_STATE) the states (ic, im, iq) of an earlier pass. FINAL writes
    sqrt(M2 / max(count - correction, 0)) to y; otherwise the states go to (oc, om, oq)."""
    pid = tl.program_id(0)
    ib = pid % n_inner_blocks
    rest = pid // n_inner_blocks
    split = rest % n_splits
    o = rest // n_splits
    cols = ib.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = o.to(tl.int64) * L * inner + cols[None, :]
    lo = split * chunk
    hi = tl.minimum(lo + chunk, L)
    n = tl.zeros([BLOCK_I], tl.float32)
    mean = tl.zeros([BLOCK_I], tl.float32)
    m2 = tl.zeros([BLOCK_I], tl.float32)
    for start in range(lo, hi, BLOCK_L):
        r = start + tl.arange(0, BLOCK_L)
        mask = (r < hi)[:, None] & col_ok[None, :]
        off = base + r[:, None].to(tl.int64) * inner
        if HAS_STATE:
            c = tl.load(ic_ptr + off, mask=mask, other=0.0)
            m = tl.load(im_ptr + off, mask=mask, other=0.0)
            q = tl.load(iq_ptr + off, mask=mask, other=0.0)
            nb = tl.sum(c, axis=0)
            mb = tl.sum(c * m, axis=0) / tl.maximum(nb, 1.0)
            d = tl.where(mask, m - mb[None, :], 0.0)
            qb = tl.sum(q, axis=0) + tl.sum(c * d * d, axis=0)
        else:
            v = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
            nb = tl.minimum(hi - start, BLOCK_L).to(tl.float32)
            mb = tl.sum(v, axis=0) / nb
            d = tl.where(mask, v - mb[None, :], 0.0)
            qb = tl.sum(d * d, axis=0)
        n_new = n + nb
        delta = mb - mean
        frac = nb / tl.maximum(n_new, 1.0)
        mean = mean + delta * frac
        m2 = m2 + qb + delta * delta * (n * frac)
        n = n_new
    out = (o.to(tl.int64) * n_splits + split) * inner + cols
    if FINAL:
        # count - correction <= 0: 0 / 0 = NaN for one element, as PyTorch
        res = tl.sqrt(m2 / tl.maximum(n - correction, 0.0))
        tl.store(y_ptr + out, res.to(y_ptr.dtype.element_ty), mask=col_ok)
    else:
        tl.store(oc_ptr + out, n, mask=col_ok)
        tl.store(om_ptr + out, mean, mask=col_ok)
        tl.store(oq_ptr + out, m2, mask=col_ok)


def _reduce(x, state, outer, L, inner, last, final_out, correction):
    """One dimension group: x (raw) or state (3 float32 tensors) viewed as (outer, L, inner).
    Returns the states (outer, inner), or final_out filled with the standard deviation when last."""
    while True:
        if inner == 1:
            block_i = 1
            block_l = min(triton.next_power_of_2(max(L, 1)), 4096)
        else:
            block_i = min(triton.next_power_of_2(inner), 64)
            block_l = max(1, min(triton.next_power_of_2(max(L, 1)), 4096 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        base_programs = outer * n_ib
        splits = 1
        min_chunk = 4 * block_l
        if base_programs < _TARGET_PROGRAMS and L > min_chunk:
            splits = min(triton.cdiv(_TARGET_PROGRAMS, base_programs), triton.cdiv(L, min_chunk))
        chunk = triton.cdiv(triton.cdiv(max(L, 1), splits), block_l) * block_l
        splits = triton.cdiv(max(L, 1), chunk)
        final = last and splits == 1
        if final:
            new_state = (final_out, final_out, final_out)
        else:
            new_state = tuple(torch.empty((outer, splits, inner), dtype=torch.float32, device=final_out.device)
                              for _ in range(3))
        src_state = state if state is not None else (final_out, final_out, final_out)
        src = x if x is not None else src_state[0]
        _std_kernel[(outer * splits * n_ib,)](src, *src_state, *new_state, final_out, L, inner, chunk, splits,
                                              n_ib, float(correction), HAS_STATE=state is not None, FINAL=final,
                                              BLOCK_L=block_l, BLOCK_I=block_i,
                                              num_warps=4 if block_l * block_i <= 1024 else 8)
        if final:
            return None
        if splits == 1:
            return new_state
        x, state, L = None, new_state, splits


def std(input: torch.Tensor, dim=None, correction=1, keepdim=False, out=None) -> torch.Tensor:
    x = input.contiguous()
    if correction is None:
        correction = 1
    nd = max(x.dim(), 1)
    dims = [] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    red = sorted({d % nd for d in dims}) if dims else list(range(nd))
    shape = list(x.shape) if x.dim() else [1]
    out_shape = [1 if i in red else s for i, s in enumerate(shape)]
    if not keepdim:
        out_shape = [s for i, s in enumerate(shape) if i not in red]
    if x.dim() == 0:
        out_shape = []
    if out is not None and out.is_contiguous():
        res = out
    else:
        res = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if res.numel():
        groups = []
        for d in red:
            if groups and groups[-1][1] == d - 1:
                groups[-1][1] = d
            else:
                groups.append([d, d])
        raw, state = x, None
        cur_shape = list(shape)
        for gi, (lo, hi) in enumerate(reversed(groups)):
            outer = 1
            for s in cur_shape[:lo]:
                outer *= s
            L = 1
            for s in cur_shape[lo:hi + 1]:
                L *= s
            inner = 1
            for s in cur_shape[hi + 1:]:
                inner *= s
            state = _reduce(raw, state, outer, L, inner, gi == len(groups) - 1, res, correction)
            raw = None
            cur_shape = cur_shape[:lo] + [1] * (hi + 1 - lo) + cur_shape[hi + 1:]
    if out is not None:
        if res is not out:
            out.copy_(res)
        return out
    return res
