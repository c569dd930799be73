import math

import torch
import triton
import triton.language as tl

_TILE = 4096  # elements of each input per program and step

# p-norm kinds: 0 counts non-zeros (p = 0), 1 sum |v|, 2 sqrt(sum v^2), 3 max |v|, 4 min |v|,
# 5 (sum |v|^p)^(1/p) through exp2/log2, 6 the same for a small integer p (powers by multiplication, root
# refined by a Newton step), PINT its exponent


def _p_kind(p):
    p = float(p)
    if p == 0:
        return 0, 1
    if p == 1:
        return 1, 1
    if p == 2:
        return 2, 2
    if p == math.inf:
        return 3, 1
    if p == -math.inf:
        return 4, 1
    if p.is_integer() and 2 < p <= 16:
        return 6, int(p)
    return 5, 1


@triton.jit
def _ipow(a, PINT: tl.constexpr):
    t = a
    for _ in tl.static_range(PINT - 1):
        t = t * a
    return t


@triton.jit
def _terms(v, p, KIND: tl.constexpr, PINT: tl.constexpr):
    a = tl.abs(v)
    if KIND == 6:
        t = _ipow(a, PINT)
    elif KIND == 0:
        t = (v != 0).to(tl.float32)
    elif KIND == 1:
        t = a
    elif KIND == 2:
        t = v * v
    elif KIND == 5:
        t = tl.where(a == 0, 0.0, tl.exp2(p * tl.log2(a)))
    else:
        t = a
    return t


@triton.jit
def _acc(acc, t, KIND: tl.constexpr):
    if KIND == 3:
        acc = tl.maximum(acc, t, propagate_nan=tl.PropagateNan.ALL)
    elif KIND == 4:
        acc = tl.minimum(acc, t, propagate_nan=tl.PropagateNan.ALL)
    else:
        acc = acc + t
    return acc


@triton.jit
def _reduce(acc, axis: tl.constexpr, KIND: tl.constexpr):
    if KIND == 3:
        r = tl.max(acc, axis=axis)
    elif KIND == 4:
        r = tl.min(acc, axis=axis)
    else:
        r = tl.sum(acc, axis=axis)
    return r


@triton.jit
def _root(r, p, KIND: tl.constexpr, PINT: tl.constexpr):
    if KIND == 2:
        r = tl.sqrt_rn(r)
    elif KIND == 5:
        r = tl.where(r == 0, 0.0, tl.exp2(tl.log2(r) / p))
    elif KIND == 6:
        y = tl.exp2(tl.log2(r) / p)
        ok = (r > 0) & (r < float("inf"))
        # one Newton step on y^p = r removes the error of the approximate log2/exp2
        y = tl.where(ok, y + y * ((r / _ipow(y, PINT) - 1.0) / p), y)
        r = tl.where(r == 0, 0.0, y)
    return r


@triton.jit
def _init(shape: tl.constexpr, KIND: tl.constexpr):
    if KIND == 4:
        acc = tl.full(shape, float("inf"), tl.float32)
    else:
        acc = tl.zeros(shape, tl.float32)
    return acc


@triton.jit
def _dist_kernel(x1_ptr, x2_ptr, d_ptr, R, D, p, eps, KIND: tl.constexpr, PINT: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    """d[r] = ||x1[r, :] - x2[r, :]||_p + eps for BLOCK_R rows of length D (float32 accumulation)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    acc = _init([BLOCK_R, BLOCK_D], KIND)
    for c0 in range(0, D, BLOCK_D):
        cols = c0 + tl.arange(0, BLOCK_D)
        ok = row_ok[:, None] & (cols < D)[None, :]
        off = rows[:, None] * D + cols[None, :]
        a = tl.load(x1_ptr + off, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(x2_ptr + off, mask=ok, other=0.0).to(tl.float32)
        t = _terms(a - b, p, KIND, PINT)
        if KIND == 4:
            t = tl.where(ok, t, float("inf"))
        acc = _acc(acc, t, KIND)
    d = _root(_reduce(acc, 1, KIND), p, KIND, PINT) + eps
    tl.store(d_ptr + rows, d, mask=row_ok)


@triton.jit
def _normalize_kernel(d_ptr, out_ptr, L, inner, n_iblocks, p, eps, KIND: tl.constexpr, PINT: tl.constexpr,
                      BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """out = d / max(||d||_p over L, eps) for d viewed as (outer, L, inner); program = (outer, inner block)."""
    pid = tl.program_id(0)
    o = pid // n_iblocks
    ib = pid % n_iblocks
    cols = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = o.to(tl.int64) * L * inner + cols[None, :]
    acc = _init([BLOCK_L, BLOCK_I], KIND)
    for l0 in range(0, L, BLOCK_L):
        ls = l0 + tl.arange(0, BLOCK_L)
        ok = (ls < L)[:, None] & col_ok[None, :]
        v = tl.load(d_ptr + base + ls[:, None].to(tl.int64) * inner, mask=ok, other=0.0)
        t = _terms(v, p, KIND, PINT)
        if KIND == 4:
            t = tl.where(ok, t, float("inf"))
        acc = _acc(acc, t, KIND)
    nrm = tl.maximum(_root(_reduce(acc, 0, KIND), p, KIND, PINT), eps)
    for l0 in range(0, L, BLOCK_L):
        ls = l0 + tl.arange(0, BLOCK_L)
        ok = (ls < L)[:, None] & col_ok[None, :]
        off = base + ls[:, None].to(tl.int64) * inner
        v = tl.load(d_ptr + off, mask=ok, other=0.0)
        tl.store(out_ptr + off, (v / nrm[None, :]).to(out_ptr.dtype.element_ty), mask=ok)


def normalize_pairwise_distance(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2,
                                dim_norm=1, eps_norm=1e-12):
    if x1.shape != x2.shape:
        raise ValueError("x1 and x2 must have one shape")
    x1 = x1 if x1.is_contiguous() else x1.contiguous()
    x2 = x2 if x2.is_contiguous() else x2.contiguous()
    D = x1.shape[-1]
    d_shape = list(x1.shape[:-1]) + ([1] if keepdim else [])
    nd = len(d_shape)
    if nd == 0:
        raise IndexError("normalize_pairwise_distance: the distances have no dimension to normalize over")
    dim = dim_norm % nd
    dev = x1.device
    out = torch.empty(d_shape, dtype=x1.dtype, device=dev)
    R = out.numel()
    if R == 0:
        return out
    d = torch.empty(R, dtype=torch.float32, device=dev)
    block_d = min(triton.next_power_of_2(max(D, 1)), 1024)
    block_r = max(1, _TILE // block_d)
    block_r = min(block_r, triton.next_power_of_2(R))
    kind, pint = _p_kind(p_distance)
    _dist_kernel[(triton.cdiv(R, block_r),)](x1, x2, d, R, D, float(p_distance), float(eps_distance),
                                             KIND=kind, PINT=pint, BLOCK_R=block_r, BLOCK_D=block_d,
                                             num_warps=8 if block_r * block_d >= 4096 else 4)
    L = d_shape[dim]
    inner = 1
    for s in d_shape[dim + 1:]:
        inner *= s
    outer = R // (L * inner)
    block_i = min(triton.next_power_of_2(inner), 128)
    block_l = max(1, min(triton.next_power_of_2(L), 4096 // block_i))
    n_ib = triton.cdiv(inner, block_i)
    kind, pint = _p_kind(p_norm)
    _normalize_kernel[(outer * n_ib,)](d, out, L, inner, n_ib, float(p_norm), float(eps_norm),
                                       KIND=kind, PINT=pint, BLOCK_L=block_l, BLOCK_I=block_i, num_warps=4)
    return out
