import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program


@triton.jit
def _gather_kernel(x_ptr, idx_ptr, y_ptr, D, L, inner, n_rows, n_col_blocks,
                   BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    """Output row r = o * L + l (of `inner` contiguous values) is input row o * D + index[l].

    Tiles are (BLOCK_R rows, BLOCK_I values): wide rows (embedding lookups) are copied with
    vectorized contiguous loads, narrow ones (gathers along the last dimension) many rows at a time."""
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    row_ok = rows < n_rows
    o = rows // L
    l = rows % L
    src_row = o * D + tl.load(idx_ptr + l, mask=row_ok, other=0).to(tl.int64)
    mask = row_ok[:, None] & (cols < inner)[None, :]
    v = tl.load(x_ptr + src_row[:, None] * inner + cols[None, :], mask=mask)
    tl.store(y_ptr + rows[:, None] * inner + cols[None, :], v, mask=mask)


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    x = input.contiguous()
    idx = index.reshape(-1).contiguous()
    shape = list(x.shape) if x.dim() else [1]
    d = dim % len(shape)
    D = shape[d]
    L = idx.numel()
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    out_shape = shape[:d] + [L] + shape[d + 1:]
    if x.dim() == 0:
        out_shape = [] if index.dim() == 0 else [L]
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    n_rows = outer * L
    if n_rows and inner:
        block_i = min(triton.next_power_of_2(inner), 1024)
        block_r = max(1, _TILE // block_i)
        n_cb = triton.cdiv(inner, block_i)
        grid = (triton.cdiv(n_rows, block_r) * n_cb,)
        _gather_kernel[grid](x, idx, y, D, L, inner, n_rows, n_cb, BLOCK_R=block_r, BLOCK_I=block_i,
                             num_warps=8)
    return y
