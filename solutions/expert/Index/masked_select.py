import torch
import triton
import triton.language as tl

_BLOCK = 4096       # elements per program of the count and compaction passes
_SCAN_BLOCK = 1024  # block counts per step of the single-program scan
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _offset(lin, D1, D2, D3, s0, s1, s2, s3, NR: tl.constexpr):
    """Memory offset of the flat (row-major) positions lin of an up-to-4-d view (D0, ..., D[NR-1])."""
    rest = lin
    off = tl.zeros_like(lin)
    if NR >= 4:
        off += (rest % D3) * s3
        rest = rest // D3
    if NR >= 3:
        off += (rest % D2) * s2
        rest = rest // D2
    if NR >= 2:
        off += (rest % D1) * s1
        rest = rest // D1
    return off + rest * s0


@triton.jit
def _count_kernel(m_ptr, cnt_ptr, n, D1, D2, D3, sm0, sm1, sm2, sm3, NR: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lin = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = lin < n
    m = tl.load(m_ptr + _offset(lin, D1, D2, D3, sm0, sm1, sm2, sm3, NR), mask=ok, other=0) != 0
    tl.store(cnt_ptr + pid, tl.sum(m.to(tl.int32), axis=0))


@triton.jit
def _scan_kernel(cnt_ptr, start_ptr, n_blocks, BLOCK: tl.constexpr):
    """Exclusive prefix sum of the block counts; start[n_blocks] receives the total."""
    carry = tl.zeros([1], tl.int64)
    for b0 in range(0, n_blocks, BLOCK):
        b = b0 + tl.arange(0, BLOCK)
        c = tl.load(cnt_ptr + b, mask=b < n_blocks, other=0).to(tl.int64)
        incl = tl.cumsum(c, axis=0)
        tl.store(start_ptr + b, carry + incl - c, mask=b < n_blocks)
        carry += tl.sum(c, axis=0)
    tl.store(start_ptr + n_blocks + tl.arange(0, 1), carry)


@triton.jit
def _compact_kernel(x_ptr, m_ptr, start_ptr, y_ptr, n, D1, D2, D3, sx0, sx1, sx2, sx3, sm0, sm1, sm2, sm3,
                    NR: tl.constexpr, BLOCK: tl.constexpr):
    """Selected elements of the block go to y[start[block] + their rank among the block's selected]."""
    pid = tl.program_id(0)
    lin = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = lin < n
    m = tl.load(m_ptr + _offset(lin, D1, D2, D3, sm0, sm1, sm2, sm3, NR), mask=ok, other=0) != 0
    rank = tl.cumsum(m.to(tl.int32), axis=0) - 1
    dst = tl.load(start_ptr + pid) + rank.to(tl.int64)
    v = tl.load(x_ptr + _offset(lin, D1, D2, D3, sx0, sx1, sx2, sx3, NR), mask=m)
    tl.store(y_ptr + dst, v, mask=m)


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


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return torch.empty(0, dtype=input.dtype, device=input.device)
    bits = _BITS[input.element_size()]
    xv = input.expand(shape)   # views: broadcast dimensions get stride 0
    mv = mask.expand(shape)
    if mv.dtype == torch.bool:
        mv = mv.view(torch.uint8)
    dims = _coalesce(list(shape), [list(xv.stride()), list(mv.stride())])
    if not dims:
        dims = [(1, [0, 0])]
    if len(dims) > 4:
        raise NotImplementedError("masked_select: more than 4 dimensions after merging")
    nr = len(dims)
    dims = dims + [(1, [0, 0])] * (4 - nr)
    D = [d[0] for d in dims]
    sx = [d[1][0] for d in dims]
    sm = [d[1][1] for d in dims]
    n_blocks = triton.cdiv(n, _BLOCK)
    cnt = torch.empty(n_blocks, dtype=torch.int32, device=input.device)
    start = torch.empty(n_blocks + 1, dtype=torch.int64, device=input.device)
    _count_kernel[(n_blocks,)](mv, cnt, n, D[1], D[2], D[3], *sm, NR=nr, BLOCK=_BLOCK, num_warps=8)
    _scan_kernel[(1,)](cnt, start, n_blocks, BLOCK=_SCAN_BLOCK, num_warps=4)
    total = int(start[n_blocks].item())   # the output size depends on the data: one sync, as PyTorch
    y = torch.empty(total, dtype=input.dtype, device=input.device)
    if total:
        _compact_kernel[(n_blocks,)](xv.view(bits) if xv.dtype != bits else xv, mv, start, y.view(bits), n,
                                     D[1], D[2], D[3], *sx, *sm, NR=nr, BLOCK=_BLOCK, num_warps=8)
    return y
