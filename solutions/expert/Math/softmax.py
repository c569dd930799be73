import torch
import triton
import triton.language as tl

_MAX_SINGLE_ROW = 32768    # longest row held in registers in one pass
_TILE = 4096               # elements per tile in the looped and strided kernels


@triton.jit
def _rows_kernel(x_ptr, y_ptr, n_rows, L, COMPUTE: tl.constexpr, SINGLE: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """Softmax over contiguous rows of length L (dim is the last dimension)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n_rows
    base = rows[:, None] * L
    out_ty = y_ptr.dtype.element_ty
    if SINGLE:
        cols = tl.arange(0, BLOCK_L)
        mask = row_ok[:, None] & (cols < L)[None, :]
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=float("-inf"))
        x = x.to(out_ty).to(COMPUTE)
        m = tl.max(x, axis=1)
        m = tl.where(m == float("-inf"), 0.0, m)
        e = tl.exp(x - m[:, None])
        s = tl.sum(e, axis=1)
        tl.store(y_ptr + base + cols[None, :], (e / s[:, None]).to(out_ty), mask=mask)
    else:
        # pass 1: per-lane online maximum and rescaled sum; pass 2: normalize and store
        m = tl.full([BLOCK_R, BLOCK_L], float("-inf"), COMPUTE)
        s = tl.zeros([BLOCK_R, BLOCK_L], COMPUTE)
        for start in range(0, L, BLOCK_L):
            cols = start + tl.arange(0, BLOCK_L)
            mask = row_ok[:, None] & (cols < L)[None, :]
            x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=float("-inf"))
            x = x.to(out_ty).to(COMPUTE)
            m_new = tl.maximum(m, x)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
            m = m_new
        mr = tl.max(m, axis=1)
        mr = tl.where(mr == float("-inf"), 0.0, mr)
        sr = tl.sum(s * tl.exp(m - mr[:, None]), axis=1)
        inv = 1.0 / sr
        for start in range(0, L, BLOCK_L):
            cols = start + tl.arange(0, BLOCK_L)
            mask = row_ok[:, None] & (cols < L)[None, :]
            x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=float("-inf"))
            x = x.to(out_ty).to(COMPUTE)
            y = tl.exp(x - mr[:, None]) * inv[:, None]
            tl.store(y_ptr + base + cols[None, :], y.to(out_ty), mask=mask)


@triton.jit
def _strided_kernel(x_ptr, y_ptr, L, inner, n_inner_blocks, COMPUTE: tl.constexpr, SINGLE: tl.constexpr,
                    BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Softmax along the middle axis of an (outer, L, inner) tensor; tiles are (BLOCK_L, BLOCK_I)."""
    pid = tl.program_id(0)
    o = pid // n_inner_blocks
    ib = pid % n_inner_blocks
    cols = ib.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = o.to(tl.int64) * L * inner + cols[None, :]
    out_ty = y_ptr.dtype.element_ty
    if SINGLE:
        r = tl.arange(0, BLOCK_L)
        mask = (r < L)[:, None] & col_ok[None, :]
        off = base + r[:, None].to(tl.int64) * inner
        x = tl.load(x_ptr + off, mask=mask, other=float("-inf")).to(out_ty).to(COMPUTE)
        m = tl.max(x, axis=0)
        m = tl.where(m == float("-inf"), 0.0, m)
        e = tl.exp(x - m[None, :])
        s = tl.sum(e, axis=0)
        tl.store(y_ptr + off, (e / s[None, :]).to(out_ty), mask=mask)
    else:
        m = tl.full([BLOCK_L, BLOCK_I], float("-inf"), COMPUTE)
        s = tl.zeros([BLOCK_L, BLOCK_I], COMPUTE)
        for start in range(0, L, BLOCK_L):
            r = start + tl.arange(0, BLOCK_L)
            mask = (r < L)[:, None] & col_ok[None, :]
            off = base + r[:, None].to(tl.int64) * inner
            x = tl.load(x_ptr + off, mask=mask, other=float("-inf")).to(out_ty).to(COMPUTE)
            m_new = tl.maximum(m, x)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
            m = m_new
        mc = tl.max(m, axis=0)
        mc = tl.where(mc == float("-inf"), 0.0, mc)
        sc = tl.sum(s * tl.exp(m - mc[None, :]), axis=0)
        inv = 1.0 / sc
        for start in range(0, L, BLOCK_L):
            r = start + tl.arange(0, BLOCK_L)
            mask = (r < L)[:, None] & col_ok[None, :]
            off = base + r[:, None].to(tl.int64) * inner
            x = tl.load(x_ptr + off, mask=mask, other=float("-inf")).to(out_ty).to(COMPUTE)
            y = tl.exp(x - mc[None, :]) * inv[None, :]
            tl.store(y_ptr + off, y.to(out_ty), mask=mask)


def _warps(elements):
    return 4 if elements <= 2048 else (8 if elements <= 8192 else 16)


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype = None) -> torch.Tensor:
    out_dtype = dtype if dtype is not None else input.dtype
    x = input.contiguous()
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if x.numel() == 0:
        return y
    shape = list(x.shape) or [1]
    d = dim % len(shape)
    L = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    compute = tl.float64 if out_dtype == torch.float64 else tl.float32
    if inner == 1:
        if L <= _MAX_SINGLE_ROW:
            block_l = triton.next_power_of_2(L)
            block_r = max(1, min(_TILE // block_l, 64))
            single = True
        else:
            block_l, block_r, single = _TILE, 1, False
        grid = (triton.cdiv(outer, block_r),)
        _rows_kernel[grid](x, y, outer, L, COMPUTE=compute, SINGLE=single, BLOCK_R=block_r, BLOCK_L=block_l,
                           num_warps=_warps(block_r * block_l))
    else:
        block_i = min(triton.next_power_of_2(inner), 64)
        while block_i > 16 and outer * triton.cdiv(inner, block_i) < 1024:
            block_i //= 2
        if triton.next_power_of_2(L) * block_i <= 8192:
            block_l, single = triton.next_power_of_2(L), True
        else:
            block_l, single = max(1, _TILE // block_i), False
        n_ib = triton.cdiv(inner, block_i)
        _strided_kernel[(outer * n_ib,)](x, y, L, inner, n_ib, COMPUTE=compute, SINGLE=single,
                                         BLOCK_L=block_l, BLOCK_I=block_i, num_warps=_warps(block_l * block_i))
    return y
