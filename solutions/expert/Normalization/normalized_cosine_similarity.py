import math

import torch
import triton
import triton.language as tl

_TILE = 4096  # elements of each input per program and step

# L_p kinds of the first normalization: 1 sum |v|, 2 sqrt(sum v^2), 3 max |v|, 5 (sum |v|^p)^(1/p)


def _p_kind(p):
    p = float(p)
    if p == 1:
        return 1
    if p == 2:
        return 2
    if p == math.inf:
        return 3
    if p == -math.inf:
        return 4
    if p == 0:
        return 0
    return 5


@triton.jit
def _terms(v, p, KIND: tl.constexpr):
    a = tl.abs(v)
    if KIND == 0:
        t = (v != 0).to(tl.float32)
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
def _finish(s12, s11, s22, q1, q2, p, eps_sim, eps_norm, KIND: tl.constexpr):
    """cos(n1, n2) with n = x / max(||x||_p, eps_norm): the sum of n1/max(||n1||, eps_sim) * n2/max(||n2||,
    eps_sim) equals s12 / (max(||x1||_2, eps_sim * c1) * max(||x2||_2, eps_sim * c2)), c = max(||x||_p, eps_norm)."""
    r1 = tl.sqrt_rn(s11)
    r2 = tl.sqrt_rn(s22)
    if KIND == 2:
        p1 = r1
        p2 = r2
    elif KIND == 5:
        p1 = tl.where(q1 == 0, 0.0, tl.exp2(tl.log2(q1) / p))
        p2 = tl.where(q2 == 0, 0.0, tl.exp2(tl.log2(q2) / p))
    else:
        p1 = q1
        p2 = q2
    c1 = tl.maximum(p1, eps_norm)
    c2 = tl.maximum(p2, eps_norm)
    return (s12 / tl.maximum(r1, eps_sim * c1)) / tl.maximum(r2, eps_sim * c2)


@triton.jit
def _rows_kernel(x1_ptr, x2_ptr, out_ptr, R, L, p, eps_sim, eps_norm, KIND: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """Reduction over the last (contiguous) dimension: BLOCK_R rows per program, one pass over both inputs."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    s12 = tl.zeros([BLOCK_R, BLOCK_L], tl.float32)
    s11 = tl.zeros([BLOCK_R, BLOCK_L], tl.float32)
    s22 = tl.zeros([BLOCK_R, BLOCK_L], tl.float32)
    if KIND == 4:
        q1 = tl.full([BLOCK_R, BLOCK_L], float("inf"), tl.float32)
    else:
        q1 = tl.zeros([BLOCK_R, BLOCK_L], tl.float32)
    q2 = q1
    for c0 in range(0, L, BLOCK_L):
        cols = c0 + tl.arange(0, BLOCK_L)
        ok = row_ok[:, None] & (cols < L)[None, :]
        off = rows[:, None] * L + cols[None, :]
        a = tl.load(x1_ptr + off, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(x2_ptr + off, mask=ok, other=0.0).to(tl.float32)
        s12 += a * b
        s11 += a * a
        s22 += b * b
        if KIND != 2:
            ta = _terms(a, p, KIND)
            tb = _terms(b, p, KIND)
            if KIND == 4:
                ta = tl.where(ok, ta, float("inf"))
                tb = tl.where(ok, tb, float("inf"))
            q1 = _acc(q1, ta, KIND)
            q2 = _acc(q2, tb, KIND)
    res = _finish(tl.sum(s12, axis=1), tl.sum(s11, axis=1), tl.sum(s22, axis=1), _reduce(q1, 1, KIND),
                  _reduce(q2, 1, KIND), p, eps_sim, eps_norm, KIND)
    tl.store(out_ptr + rows, res.to(out_ptr.dtype.element_ty), mask=row_ok)


@triton.jit
def _strided_kernel(x1_ptr, x2_ptr, out_ptr, L, inner, n_iblocks, p, eps_sim, eps_norm, KIND: tl.constexpr,
                    BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Reduction over a middle dimension of (outer, L, inner): program = (outer, block of inner); loads are
    contiguous along inner."""
    pid = tl.program_id(0)
    o = pid // n_iblocks
    ib = pid % n_iblocks
    cols = ib * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = o.to(tl.int64) * L * inner + cols[None, :]
    s12 = tl.zeros([BLOCK_L, BLOCK_I], tl.float32)
    s11 = tl.zeros([BLOCK_L, BLOCK_I], tl.float32)
    s22 = tl.zeros([BLOCK_L, BLOCK_I], tl.float32)
    if KIND == 4:
        q1 = tl.full([BLOCK_L, BLOCK_I], float("inf"), tl.float32)
    else:
        q1 = tl.zeros([BLOCK_L, BLOCK_I], tl.float32)
    q2 = q1
    for l0 in range(0, L, BLOCK_L):
        ls = l0 + tl.arange(0, BLOCK_L)
        ok = (ls < L)[:, None] & col_ok[None, :]
        off = base + ls[:, None].to(tl.int64) * inner
        a = tl.load(x1_ptr + off, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(x2_ptr + off, mask=ok, other=0.0).to(tl.float32)
        s12 += a * b
        s11 += a * a
        s22 += b * b
        if KIND != 2:
            ta = _terms(a, p, KIND)
            tb = _terms(b, p, KIND)
            if KIND == 4:
                ta = tl.where(ok, ta, float("inf"))
                tb = tl.where(ok, tb, float("inf"))
            q1 = _acc(q1, ta, KIND)
            q2 = _acc(q2, tb, KIND)
    res = _finish(tl.sum(s12, axis=0), tl.sum(s11, axis=0), tl.sum(s22, axis=0), _reduce(q1, 0, KIND),
                  _reduce(q2, 0, KIND), p, eps_sim, eps_norm, KIND)
    tl.store(out_ptr + o.to(tl.int64) * inner + cols, res.to(out_ptr.dtype.element_ty), mask=col_ok)


def normalized_cosine_similarity(x1, x2, dim=1, eps_similarity=1e-08, p_norm=2, eps_norm=1e-12):
    if x1.shape != x2.shape:
        raise ValueError("x1 and x2 must have one shape")
    x1 = x1 if x1.is_contiguous() else x1.contiguous()
    x2 = x2 if x2.is_contiguous() else x2.contiguous()
    shape = list(x1.shape)
    nd = max(len(shape), 1)
    dim = dim % nd
    L = shape[dim] if shape else 1
    inner = 1
    for s in shape[dim + 1:]:
        inner *= s
    out_shape = shape[:dim] + shape[dim + 1:]
    out = torch.empty(out_shape, dtype=x1.dtype, device=x1.device)
    n_out = out.numel()
    if n_out == 0:
        return out
    kind = _p_kind(p_norm)
    args = (float(p_norm), float(eps_similarity), float(eps_norm))
    if inner == 1:
        block_l = min(triton.next_power_of_2(max(L, 1)), 1024)
        block_r = min(max(1, _TILE // block_l), triton.next_power_of_2(n_out))
        _rows_kernel[(triton.cdiv(n_out, block_r),)](x1, x2, out, n_out, L, *args, KIND=kind, BLOCK_R=block_r,
                                                     BLOCK_L=block_l, num_warps=8 if block_r * block_l >= 4096 else 4)
    else:
        outer = n_out // inner
        block_i = min(triton.next_power_of_2(inner), 256)
        block_l = max(1, min(triton.next_power_of_2(max(L, 1)), 2048 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        _strided_kernel[(outer * n_ib,)](x1, x2, out, L, inner, n_ib, *args, KIND=kind, BLOCK_L=block_l,
                                         BLOCK_I=block_i, num_warps=8 if block_l * block_i >= 2048 else 4)
    return out
