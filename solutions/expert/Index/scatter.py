import torch
import triton
import triton.language as tl

_BLOCK = 4096  # elements per program
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _scatter_kernel(idx_ptr, src_ptr, y_ptr, n_rows, K, D1, D2, D3,
                    ss0, ss1, ss2, ss3, ssk, ys0, ys1, ys2, ys3, ysk, ys_dim,
                    n_col_blocks, NR: tl.constexpr, DIM: tl.constexpr,
                    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """index viewed as (rows, K), rows being its NR leading dimensions (D0, ..., D[NR-1]), K the last.
    y at the index position, with coordinate DIM replaced by index's value, receives src there.
    DIM is the dimension's number (0..NR; NR means the last one)."""
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows < n_rows)[:, None] & (cols < K)[None, :]
    idx = tl.load(idx_ptr + rows[:, None] * K + cols[None, :], mask=mask, other=0)
    # coordinates of the row; the one along DIM is replaced by the index value
    rest = rows
    s_off = tl.zeros([BLOCK_R], tl.int64)
    y_off = tl.zeros([BLOCK_R], tl.int64)
    if NR >= 4:
        i = rest % D3
        rest = rest // D3
        s_off += i * ss3
        if DIM != 3:
            y_off += i * ys3
    if NR >= 3:
        i = rest % D2
        rest = rest // D2
        s_off += i * ss2
        if DIM != 2:
            y_off += i * ys2
    if NR >= 2:
        i = rest % D1
        rest = rest // D1
        s_off += i * ss1
        if DIM != 1:
            y_off += i * ys1
    if NR >= 1:
        s_off += rest * ss0
        if DIM != 0:
            y_off += rest * ys0
    s_off2 = s_off[:, None] + cols[None, :] * ssk
    if DIM == NR:
        y_off2 = y_off[:, None] + idx.to(tl.int64) * ysk
    else:
        y_off2 = y_off[:, None] + cols[None, :] * ysk + idx.to(tl.int64) * ys_dim
    v = tl.load(src_ptr + s_off2, mask=mask)
    tl.store(y_ptr + y_off2, v, mask=mask)


def scatter(input, dim, index, src):
    x = input.contiguous()
    nd = max(x.dim(), 1)
    d = dim % nd
    y = torch.empty_like(x)
    n = x.numel()
    bits = _BITS[x.element_size()]
    if n:
        _copy_kernel[(triton.cdiv(n, _BLOCK),)](x.view(bits), y.view(bits), n, BLOCK=_BLOCK, num_warps=8)
    k = index.numel()
    if k == 0 or n == 0:
        return y
    if not torch.is_tensor(src):
        raise NotImplementedError("scatter: src must be a tensor")
    idx = index.contiguous()
    s = src if src.dim() else src.reshape(1)
    ishape = list(idx.shape) if idx.dim() else [1]
    sstr = list(s.stride())
    ystr = list(y.stride()) if y.dim() else [1]
    nr = len(ishape) - 1
    if nr > 4:
        raise NotImplementedError("scatter: more than 5 dimensions")
    pad = 4 - nr
    lead = ishape[:-1] + [1] * pad
    ss = sstr[:-1] + [0] * pad
    ys = ystr[:-1] + [0] * pad
    K = ishape[-1]
    n_rows = k // K
    block_c = min(triton.next_power_of_2(K), 1024)
    block_r = max(1, min(_BLOCK // block_c, triton.next_power_of_2(n_rows)))
    n_cb = triton.cdiv(K, block_c)
    grid = (triton.cdiv(n_rows, block_r) * n_cb,)
    _scatter_kernel[grid](idx, s.view(bits), y.view(bits), n_rows, K, lead[1], lead[2], lead[3],
                          *ss, sstr[-1], *ys, ystr[-1], ystr[d], n_cb, NR=nr, DIM=d,
                          BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    return y
