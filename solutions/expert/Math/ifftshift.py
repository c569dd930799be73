import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program
_MAX_DIMS = 5

# ifftshift is a gather: out[i] = in[(i + L//2) mod L] along every shifted dimension. The elements are
# moved as integers of their width (float32 -> int32, float16 -> int16, complex64 -> int64), so every
# bit pattern (NaN payloads, -0.0) is kept. Neighbouring dimensions that are not shifted are merged;
# the output is walked as rows (up to four leading dimensions) x columns (the last dimension), so
# each row is two contiguous runs of the input.

_BITS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _roll_kernel(x_ptr, y_ptr, n_rows, n_col_blocks,
                 D0, D1, D2, D3, C, S0, S1, S2, S3, SC,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    # row index -> (i0, i1, i2, i3) -> shifted source row
    i3 = rows % D3
    t = rows // D3
    i2 = t % D2
    t = t // D2
    i1 = t % D1
    i0 = t // D1
    j0 = i0 + S0
    j0 = tl.where(j0 >= D0, j0 - D0, j0)
    j1 = i1 + S1
    j1 = tl.where(j1 >= D1, j1 - D1, j1)
    j2 = i2 + S2
    j2 = tl.where(j2 >= D2, j2 - D2, j2)
    j3 = i3 + S3
    j3 = tl.where(j3 >= D3, j3 - D3, j3)
    src_row = ((j0 * D1 + j1) * D2 + j2) * D3 + j3
    jc = cols + SC
    jc = tl.where(jc >= C, jc - C, jc)
    mask = (rows < n_rows)[:, None] & (cols < C)[None, :]
    v = tl.load(x_ptr + (src_row * C)[:, None] + jc[None, :], mask=mask)
    tl.store(y_ptr + (rows * C)[:, None] + cols[None, :], v, mask=mask)


def _merge(shape, shifts):
    """Drop size-1 dimensions and merge runs of unshifted dimensions (and an unshifted run into the
    shifted dimension just before it, whose shift then scales by the run's size)."""
    dims = []
    for size, s in zip(shape, shifts):
        if size == 1:
            continue
        if dims and s == 0:
            ps, pss = dims[-1]
            dims[-1] = (ps * size, pss * size)  # (i*size + j + s*size) mod (L*size): same roll
        else:
            dims.append((size, s))
    return dims


def _launch(src, dst, dims):
    while len(dims) < _MAX_DIMS:
        dims.insert(0, (1, 0))
    (d0, s0), (d1, s1), (d2, s2), (d3, s3), (c, sc) = dims
    n_rows = d0 * d1 * d2 * d3
    block_c = min(triton.next_power_of_2(c), 1024)
    block_r = max(1, _TILE // block_c)
    n_cb = triton.cdiv(c, block_c)
    grid = (triton.cdiv(n_rows, block_r) * n_cb,)
    _roll_kernel[grid](src, dst, n_rows, n_cb, d0, d1, d2, d3, c, s0, s1, s2, s3, sc,
                       BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)


def ifftshift(input, dim=None):
    x = input if input.is_contiguous() else input.contiguous()
    nd = x.dim()
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    shifts = [0] * nd
    for d in dims:
        d = d % nd if nd else 0
        shifts[d] += x.shape[d] // 2
    shifts = [s % L if L else 0 for s, L in zip(shifts, x.shape)]
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    bits = _BITS[x.element_size()]
    src = x.reshape(-1).view(bits)
    dst = out.view(-1).view(bits)
    merged = _merge(list(x.shape), shifts)
    if not merged:
        merged = [(1, 0)]
    # one kernel takes up to five merged dimensions; beyond that, roll a few dimensions per pass
    while len(merged) > _MAX_DIMS:
        part = [(size, s) if i < 2 * 2 else (size, 0) for i, (size, s) in enumerate(merged)]
        rest = [(size, 0) if i < 2 * 2 else (size, s) for i, (size, s) in enumerate(merged)]
        tmp = torch.empty_like(dst)
        _launch(src, tmp, _merge([p[0] for p in part], [p[1] for p in part]))
        src = tmp
        merged = _merge([p[0] for p in rest], [p[1] for p in rest])
    _launch(src, dst, merged)
    return out
