import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _fill_kernel(x_ptr, idx_ptr, bits, D, L, inner, n_rows, n_col_blocks,
                 BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    """Row r = o * L + l (of `inner` contiguous elements) of the index: x row o * D + index[l] is set
    to the bit pattern `bits` (x is viewed as integers of its element size)."""
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    row_ok = rows < n_rows
    o = rows // L
    l = rows % L
    dst_row = o * D + tl.load(idx_ptr + l, mask=row_ok, other=0).to(tl.int64)
    mask = row_ok[:, None] & (cols < inner)[None, :]
    val = tl.full([BLOCK_R, BLOCK_I], bits, x_ptr.dtype.element_ty)
    tl.store(x_ptr + dst_row[:, None] * inner + cols[None, :], val, mask=mask)


def index_fill_(dim, x, index, value):
    if not x.is_contiguous():
        raise NotImplementedError("index_fill_: x must be contiguous")
    shape = list(x.shape) if x.dim() else [1]
    d = dim % len(shape)
    D = shape[d]
    idx = index.reshape(-1)
    L = idx.numel()
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    n_rows = outer * L
    if n_rows == 0 or inner == 0:
        return x
    if not x.dtype.is_floating_point and isinstance(value, float):
        value = int(value)   # a cast truncates toward zero
    # the value's bit pattern in x's dtype, converted on the host exactly as PyTorch casts a scalar
    bits_dtype = _BITS[x.element_size()]
    bits = int(torch.tensor(value, dtype=x.dtype).view(bits_dtype).item())
    block_i = min(triton.next_power_of_2(inner), 1024)
    block_r = max(1, min(_TILE // block_i, triton.next_power_of_2(n_rows)))
    n_cb = triton.cdiv(inner, block_i)
    grid = (triton.cdiv(n_rows, block_r) * n_cb,)
    _fill_kernel[grid](x.view(bits_dtype), idx.contiguous(), bits, D, L, inner, n_rows, n_cb,
                       BLOCK_R=block_r, BLOCK_I=block_i, num_warps=8)
    return x
