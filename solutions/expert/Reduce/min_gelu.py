import torch
import triton
import triton.language as tl

_BLOCK = 4096
_MAX_PARTIALS = 1024      # partial minima of the first pass: about 8 programs per H200 SM
_TARGET_PROGRAMS = 1024
_NONE = tl.constexpr(2**62)  # "no index yet"


@triton.jit
def _load_f32(ptr, mask):
    v = tl.load(ptr, mask=mask, other=0)
    if v.dtype == tl.bfloat16:
        # exact bf16 -> fp32 by moving the bits (the CPU interpreter mishandles subnormals otherwise)
        return (v.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    return v.to(tl.float32)


@triton.jit
def _round_to(v, DT: tl.constexpr):
    """float32 -> DT -> float32 with round-to-nearest-even (done on the bits for bfloat16, whose
    conversion the CPU interpreter truncates)."""
    if DT == tl.bfloat16:
        b = v.to(tl.int32, bitcast=True)
        r = (b + 0x7FFF + ((b >> 16) & 1)) & -65536
        r = tl.where(v != v, b | 0x400000, r)
        return r.to(tl.float32, bitcast=True)
    else:
        return v.to(DT).to(tl.float32)


@triton.jit
def _gelu(x, TANH: tl.constexpr):
    if TANH:
        # 0.5 * x * (1 + tanh(u)) = x * sigmoid(2u): no cancellation for negative x
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        return x / (1.0 + tl.exp(-2.0 * u))
    else:
        return x * 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def _partial_min_kernel(x_ptr, part_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    """Grid-stride loop: each lane keeps its smallest GELU value and whether it saw a NaN."""
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    best = tl.full([BLOCK], float("inf"), tl.float32)
    nan = tl.zeros([BLOCK], tl.int32)
    for start in range(pid.to(tl.int64) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        g = _gelu(_load_f32(x_ptr + offs, mask), TANH)
        best = tl.where(mask & (g < best), g, best)
        nan = nan | (mask & (g != g)).to(tl.int32)
    res = tl.min(best, axis=0)
    res = tl.where(tl.max(nan, axis=0) > 0, float("nan"), res)
    tl.store(part_ptr + pid, res)


@triton.jit
def _final_min_kernel(part_ptr, out_ptr, n_parts, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=float("inf"))
    res = tl.min(tl.where(p != p, float("inf"), p), axis=0)
    res = tl.where(tl.max((p != p).to(tl.int32), axis=0) > 0, float("nan"), res)
    tl.store(out_ptr, res.to(out_ptr.dtype.element_ty))


@triton.jit
def _argmin_kernel(x_ptr, xi_ptr, v_ptr, i_ptr, L, inner, chunk, n_splits, n_inner_blocks,
                   HAS_IDX: tl.constexpr, TANH: tl.constexpr, ROUND: tl.constexpr,
                   BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Min and argmin of GELU over L of an (outer, L, inner) tensor, rows [split*chunk, (split+1)*chunk).

    NaN beats every number and ties go to the smallest index. With HAS_IDX, x holds partial winners
    (GELU values, float32) and xi their indices."""
    pid = tl.program_id(0)
    ib = pid % n_inner_blocks
    rest = pid // n_inner_blocks
    split = rest % n_splits
    o = rest // n_splits
    cols = ib.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = o.to(tl.int64) * L * inner + cols[None, :]
    lo = split * chunk
    hi = tl.minimum(lo + chunk, L)
    best_v = tl.zeros([BLOCK_L, BLOCK_I], tl.float32)
    best_i = tl.full([BLOCK_L, BLOCK_I], _NONE, tl.int64)
    for start in range(lo, hi, BLOCK_L):
        r = start + tl.arange(0, BLOCK_L)
        mask = (r < hi)[:, None] & col_ok[None, :]
        off = base + r[:, None].to(tl.int64) * inner
        if HAS_IDX:
            v = tl.load(x_ptr + off, mask=mask, other=0)
            idx = tl.load(xi_ptr + off, mask=mask, other=_NONE)
        else:
            v = _gelu(_load_f32(x_ptr + off, mask), TANH)
            if ROUND:  # compare the values as the output dtype holds them
                v = _round_to(v, x_ptr.dtype.element_ty)
            idx = r[:, None].to(tl.int64) + tl.zeros([BLOCK_L, BLOCK_I], tl.int64)
        take = mask & ((best_i == _NONE) | (v < best_v) | ((v != v) & (best_v == best_v)))
        best_v = tl.where(take, v, best_v)
        best_i = tl.where(take, idx, best_i)
    valid = best_i != _NONE
    is_nan = valid & (best_v != best_v)
    any_nan = tl.max(is_nan.to(tl.int32), axis=0)
    vmin = tl.min(tl.where(valid & ~is_nan, best_v, float("inf")), axis=0)
    winner = tl.where(any_nan[None, :] > 0, is_nan, valid & (best_v == vmin[None, :]))
    res_i = tl.min(tl.where(winner, best_i, _NONE), axis=0)
    sel = winner & (best_i == res_i[None, :])
    res_v = tl.min(tl.where(sel, best_v, float("inf")), axis=0)
    res_v = tl.where(any_nan > 0, float("nan"), res_v)
    out = (o.to(tl.int64) * n_splits + split) * inner + cols
    tl.store(i_ptr + out, res_i, mask=col_ok)
    tl.store(v_ptr + out, res_v.to(v_ptr.dtype.element_ty), mask=col_ok)


def _min_all(x, tanh, out):
    n = x.numel()
    if n == 0:
        raise RuntimeError("min(): the input is empty")
    n_parts = max(1, min(triton.cdiv(n, _BLOCK), _MAX_PARTIALS))
    part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _partial_min_kernel[(n_parts,)](x, part, n, TANH=tanh, BLOCK=_BLOCK, num_warps=8)
    res = out if out is not None else torch.empty((), dtype=x.dtype, device=x.device)
    _final_min_kernel[(1,)](part, res, n_parts, BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return res


def _min_dim(x, dim, keepdim, tanh, out):
    shape = list(x.shape) if x.dim() else [1]
    d = dim % len(shape)
    L = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    out_shape = shape[:d] + [1] + shape[d + 1:] if keepdim else shape[:d] + shape[d + 1:]
    if x.dim() == 0:
        out_shape = []
    if out is not None:
        vals, idxs = out[0], out[1]
    else:
        vals = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        idxs = torch.empty(out_shape, dtype=torch.int64, device=x.device)
    if outer * inner == 0:
        return (vals, idxs)
    if L == 0:
        raise IndexError("min(): cannot compute the minimum over an empty dimension")
    src, src_i, has_idx = x, x, False
    while True:
        if inner == 1:
            block_i = 1
            block_l = _min(triton.next_power_of_2(L), 2048)
        else:
            block_i = _min(triton.next_power_of_2(inner), 64)
            block_l = max(1, _min(triton.next_power_of_2(L), 2048 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        base_programs = outer * n_ib
        splits = 1
        min_chunk = 4 * block_l
        if base_programs < _TARGET_PROGRAMS and L > min_chunk:
            splits = _min(triton.cdiv(_TARGET_PROGRAMS, base_programs), triton.cdiv(L, min_chunk))
        chunk = triton.cdiv(triton.cdiv(L, splits), block_l) * block_l
        splits = triton.cdiv(L, chunk)
        if splits == 1:
            v, i = vals, idxs
        else:
            v = torch.empty((outer, splits, inner), dtype=torch.float32, device=x.device)
            i = torch.empty((outer, splits, inner), dtype=torch.int64, device=x.device)
        _argmin_kernel[(outer * splits * n_ib,)](src, src_i, v, i, L, inner, chunk, splits, n_ib,
                                                 HAS_IDX=has_idx, TANH=tanh, ROUND=x.dtype != torch.float32,
                                                 BLOCK_L=block_l, BLOCK_I=block_i,
                                                 num_warps=4 if block_l * block_i <= 1024 else 8)
        if splits == 1:
            return (vals, idxs)
        src, src_i, L, has_idx = v, i, splits, True


def _min(a, b):
    return a if a < b else b


def min_gelu(input, dim=None, keepdim=False, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Invalid value for approximate: {approximate}. Choose 'none' or 'tanh'.")
    x = input.contiguous()
    tanh = approximate == "tanh"
    if dim is None:
        return _min_all(x, tanh, out)
    return _min_dim(x, dim, keepdim, tanh, out)
