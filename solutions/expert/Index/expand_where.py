import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _where_kernel(x_ptr, c_ptr, o_ptr, y_ptr, n_rows, N,
                  D1, D2, D3,
                  sx0, sx1, sx2, sx3, sxc, sc0, sc1, sc2, sc3, scc, so0, so1, so2, so3, soc,
                  n_col_blocks, NR: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y[row, col] = cond ? x : other over a (rows, N) view of the output, rows being NR <= 4
    leading dimensions (D0, ..., D[NR-1], outermost first) decomposed once per row; x, cond and other are read
    through their broadcast strides (0 along broadcast dimensions). Values move as raw bits."""
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    row_ok = rows < n_rows
    rest = rows
    ox = tl.zeros([BLOCK_R], tl.int64)
    oc = tl.zeros([BLOCK_R], tl.int64)
    oo = tl.zeros([BLOCK_R], tl.int64)
    if NR >= 4:
        i = rest % D3
        rest = rest // D3
        ox += i * sx3
        oc += i * sc3
        oo += i * so3
    if NR >= 3:
        i = rest % D2
        rest = rest // D2
        ox += i * sx2
        oc += i * sc2
        oo += i * so2
    if NR >= 2:
        i = rest % D1
        rest = rest // D1
        ox += i * sx1
        oc += i * sc1
        oo += i * so1
    ox += rest * sx0
    oc += rest * sc0
    oo += rest * so0
    mask = row_ok[:, None] & (cols < N)[None, :]
    cond = tl.load(c_ptr + oc[:, None] + cols[None, :] * scc, mask=mask, other=0) != 0
    # read only the side that is selected
    x = tl.load(x_ptr + ox[:, None] + cols[None, :] * sxc, mask=mask & cond)
    o = tl.load(o_ptr + oo[:, None] + cols[None, :] * soc, mask=mask & ~cond)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], tl.where(cond, x, o), mask=mask)


def _coalesce(shape, strides):
    """Drop size-1 dimensions and merge neighbours that are contiguous for every tensor."""
    dims = [(s, [st[i] for st in strides]) for i, s in enumerate(shape) if s != 1]
    out = []
    for s, st in dims:
        if out and all(prev == cur * s for prev, cur in zip(out[-1][1], st)):
            out[-1] = (out[-1][0] * s, st)
        else:
            out.append((s, st))
    return out


def expand_where(input, target_sizes, cond, other):
    expanded = input.expand(*target_sizes)   # a view
    shape = torch.broadcast_shapes(tuple(expanded.shape), tuple(cond.shape), tuple(other.shape))
    dtype = torch.result_type(expanded, other) if expanded.dtype != other.dtype else other.dtype
    y = torch.empty(shape, dtype=dtype, device=other.device)
    n = y.numel()
    if n == 0:
        return y
    if expanded.dtype != dtype or other.dtype != dtype:
        raise TypeError("expand_where: input and other must share a dtype")
    bits = _BITS[y.element_size()]
    xv = expanded.expand(shape)
    cv = cond.expand(shape)
    ov = other.expand(shape)
    dims = _coalesce(list(shape), [list(xv.stride()), list(cv.stride()), list(ov.stride())])
    if not dims:
        dims = [(1, [0, 0, 0])]
    if len(dims) > 5:
        raise NotImplementedError("expand_where: more than 5 dimensions after merging")
    N, (sxc, scc, soc) = dims[-1]
    lead = dims[:-1]
    nr = max(len(lead), 1)
    lead = lead + [(1, [0, 0, 0])] * (4 - len(lead))   # pad to 4 leading dimensions (unused: NR)
    sizes = [d[0] for d in lead]
    n_rows = n // N
    block_c = min(triton.next_power_of_2(N), 1024)
    block_r = max(1, min(_TILE // block_c, triton.next_power_of_2(n_rows)))
    n_cb = triton.cdiv(N, block_c)
    grid = (triton.cdiv(n_rows, block_r) * n_cb,)
    sx = [d[1][0] for d in lead]
    sc = [d[1][1] for d in lead]
    so = [d[1][2] for d in lead]
    _where_kernel[grid](xv.view(bits) if xv.dtype != bits else xv, cv.view(torch.uint8) if cv.dtype == torch.bool else cv,
                        ov.view(bits) if ov.dtype != bits else ov, y.view(bits), n_rows, N,
                        sizes[1], sizes[2], sizes[3],
                        *sx, sxc, *sc, scc, *so, soc, n_cb, NR=nr, BLOCK_R=block_r, BLOCK_C=block_c,
                        num_warps=8)
    return y
