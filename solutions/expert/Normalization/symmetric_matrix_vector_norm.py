import math

import torch
import triton
import triton.language as tl

_BS = 128      # square tile of A handled by one program
_SUB = 32      # rows of the tile loaded at a time
_BLOCK = 1024  # elements of y per program in the combine step

# p-norm kinds: 0 counts non-zeros (p = 0), 1 sum |y|, 2 sqrt(sum y^2), 3 max |y|, 4 min |y|, 5 (sum |y|^p)^(1/p)
_P0, _P1, _P2, _PINF, _PNINF, _PGEN = range(6)


def _p_kind(p):
    p = float(p)
    if p == 0:
        return _P0
    if p == 1:
        return _P1
    if p == 2:
        return _P2
    if p == math.inf:
        return _PINF
    if p == -math.inf:
        return _PNINF
    return _PGEN


@triton.jit
def _tile_kernel(a_ptr, x_ptr, part_ptr, n, BS: tl.constexpr, SUB: tl.constexpr):
    """Tile (I, J) of the upper block triangle (J >= I) of the symmetric A, read once. Its row sums
    A[I, J] @ x[J] go to part[J, rows of I]; for J > I its column sums A[I, J]^T @ x[I] stand in for the
    mirrored tile (J, I) and go to part[I, columns of J]. Every (slot, element) of part is written by
    exactly one program, so no atomics and no zero fill are needed."""
    bi = tl.program_id(0)
    bj = tl.program_id(1)
    if bj >= bi:
        cols = bj * BS + tl.arange(0, BS)
        col_ok = cols < n
        xj = tl.load(x_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        acc = tl.zeros([BS], tl.float32)
        for r0 in range(0, BS, SUB):
            rows = bi * BS + r0 + tl.arange(0, SUB)
            row_ok = rows < n
            a = tl.load(a_ptr + rows[:, None].to(tl.int64) * n + cols[None, :],
                        mask=row_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32)
            tl.store(part_ptr + bj.to(tl.int64) * n + rows, tl.sum(a * xj[None, :], axis=1), mask=row_ok)
            xi = tl.load(x_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
            acc += tl.sum(a * xi[:, None], axis=0)
        if bj > bi:
            tl.store(part_ptr + bi.to(tl.int64) * n + cols, acc, mask=col_ok)


@triton.jit
def _norm_terms(y, p, KIND: tl.constexpr):
    a = tl.abs(y)
    if KIND == 0:
        t = (y != 0).to(tl.float32)
    elif KIND == 1:
        t = a
    elif KIND == 2:
        t = y * y
    elif KIND == 5:
        t = tl.where(a == 0, 0.0, tl.exp2(p * tl.log2(a)))
    else:
        t = a
    return t


@triton.jit
def _combine(t, KIND: tl.constexpr):
    if KIND == 3:
        r = tl.max(t, axis=0)
    elif KIND == 4:
        r = tl.min(t, axis=0)
    else:
        r = tl.sum(t, axis=0)
    return r


@triton.jit
def _y_kernel(part_ptr, q_ptr, n, n_slots, alpha, beta, p, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """y = alpha * (A @ x) (the sum of the slots), y = y + beta * y, then this block's share of the norm."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    s = tl.zeros([BLOCK], tl.float32)
    for slot in range(0, n_slots):
        s += tl.load(part_ptr + slot * n + offs, mask=ok, other=0.0)
    y = alpha * s
    y = y + beta * y
    t = _norm_terms(y, p, KIND)
    if KIND == 4:
        t = tl.where(ok, t, float("inf"))
    else:
        t = tl.where(ok, t, 0.0)
    tl.store(q_ptr + tl.program_id(0), _combine(t, KIND))


@triton.jit
def _final_kernel(q_ptr, out_ptr, m, p, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """Combine the per-block shares and take the root."""
    if KIND == 4:
        acc = tl.full([BLOCK], float("inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, m, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        ok = offs < m
        if KIND == 3:
            acc = tl.maximum(acc, tl.load(q_ptr + offs, mask=ok, other=0.0))
        elif KIND == 4:
            acc = tl.minimum(acc, tl.load(q_ptr + offs, mask=ok, other=float("inf")))
        else:
            acc += tl.load(q_ptr + offs, mask=ok, other=0.0)
    r = _combine(acc, KIND)
    if KIND == 2:
        r = tl.sqrt_rn(r)
    elif KIND == 5:
        r = tl.where(r == 0, 0.0, tl.exp2(tl.log2(r) / p))
    tl.store(out_ptr, r.to(out_ptr.dtype.element_ty))


def symmetric_matrix_vector_norm(A, x, alpha, beta, p=2.0):
    n = x.numel()
    if A.shape != (n, n):
        raise ValueError("A must be (n, n) and x of length n")
    A = A if A.is_contiguous() else A.contiguous()
    x = x if x.is_contiguous() else x.contiguous()
    dev = A.device
    kind = _p_kind(p)
    out = torch.empty((), dtype=torch.promote_types(A.dtype, x.dtype), device=dev)
    nb = triton.cdiv(n, _BS)
    part = torch.empty((max(nb, 1), max(n, 1)), dtype=torch.float32, device=dev)
    if n:
        _tile_kernel[(nb, nb)](A, x, part, n, BS=_BS, SUB=_SUB, num_warps=4)
    m = triton.cdiv(n, _BLOCK)
    q = torch.empty(max(m, 1), dtype=torch.float32, device=dev)
    if m:
        _y_kernel[(m,)](part, q, n, nb, float(alpha), float(beta), float(p), KIND=kind, BLOCK=_BLOCK, num_warps=4)
    _final_kernel[(1,)](q, out, m, float(p), KIND=kind, BLOCK=1024, num_warps=4)
    return out
