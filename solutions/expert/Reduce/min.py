import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024
_NONE = tl.constexpr(2**62)  # "no index yet"
_IMAX = tl.constexpr(2**63 - 1)


@triton.jit
def _to_val(v, VAL: tl.constexpr):
    if v.dtype == tl.bfloat16:
        # exact bf16 -> fp32 by moving the bits (also right for subnormals, which some conversion
        # paths, e.g. the Triton CPU interpreter, get wrong)
        bits = v.to(tl.int16, bitcast=True).to(tl.int32) << 16
        return bits.to(tl.float32, bitcast=True).to(VAL)
    return v.to(VAL)


@triton.jit
def _store_val(ptr, off, v, mask):
    if ptr.dtype.element_ty == tl.bfloat16:
        # the value is an exact bf16 held in fp32: its top 16 bits are the bf16 (NaN stays NaN)
        bits = (v.to(tl.int32, bitcast=True) >> 16).to(tl.int16)
        tl.store(ptr + off, bits.to(tl.bfloat16, bitcast=True), mask=mask)
    else:
        tl.store(ptr + off, v.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _min_kernel(x_ptr, xi_ptr, v_ptr, i_ptr, L, inner, chunk, n_splits, n_inner_blocks,
                HAS_IDX: tl.constexpr, IS_INT: tl.constexpr, VAL: tl.constexpr,
                BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Min and argmin of an (outer, L, inner) tensor over L, for rows [split*chunk, (split+1)*chunk).

    Writes the winning value and index of each (o, split, col) to v_ptr/i_ptr. NaN beats every number
    and ties go to the smallest index. With HAS_IDX, x holds partial winners and xi their indices."""
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
    best_v = tl.zeros([BLOCK_L, BLOCK_I], VAL)
    best_i = tl.full([BLOCK_L, BLOCK_I], _NONE, tl.int64)
    for start in range(lo, hi, BLOCK_L):
        r = start + tl.arange(0, BLOCK_L)
        mask = (r < hi)[:, None] & col_ok[None, :]
        off = base + r[:, None].to(tl.int64) * inner
        v = _to_val(tl.load(x_ptr + off, mask=mask, other=0), VAL)
        if HAS_IDX:
            idx = tl.load(xi_ptr + off, mask=mask, other=_NONE)
        else:
            idx = r[:, None].to(tl.int64) + tl.zeros([BLOCK_L, BLOCK_I], tl.int64)
        # each lane sees increasing indices: replace only on a strictly smaller value, or a first NaN
        take = mask & ((best_i == _NONE) | (v < best_v) | ((v != v) & (best_v == best_v)))
        best_v = tl.where(take, v, best_v)
        best_i = tl.where(take, idx, best_i)
    valid = best_i != _NONE
    is_nan = valid & (best_v != best_v)
    any_nan = tl.max(is_nan.to(tl.int32), axis=0)
    if IS_INT:
        vmin = tl.min(tl.where(valid, best_v, _IMAX), axis=0)
    else:
        vmin = tl.min(tl.where(valid & ~is_nan, best_v, float("inf")), axis=0)
    winner = tl.where(any_nan[None, :] > 0, is_nan, valid & (best_v == vmin[None, :]))
    res_i = tl.min(tl.where(winner, best_i, _NONE), axis=0)
    if IS_INT:
        res_v = vmin
    else:
        # the winning element itself (keeps the sign of a zero minimum)
        sel = winner & (best_i == res_i[None, :])
        res_v = tl.min(tl.where(sel, best_v, float("inf")), axis=0)
        res_v = tl.where(any_nan > 0, float("nan"), res_v)
    out = (o.to(tl.int64) * n_splits + split) * inner + cols
    tl.store(i_ptr + out, res_i, mask=col_ok)
    _store_val(v_ptr, out, res_v, col_ok)


def min(input_tensor, dim, keepdim=False):
    x = input_tensor.contiguous()
    is_int = not x.dtype.is_floating_point
    if is_int:
        val_dtype = torch.int64
    else:
        val_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    val_tl = {torch.int64: tl.int64, torch.float32: tl.float32, torch.float64: tl.float64}[val_dtype]
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
    if outer * inner == 0:
        return (torch.empty(out_shape, dtype=x.dtype, device=x.device),
                torch.empty(out_shape, dtype=torch.int64, device=x.device))
    if L == 0:
        raise IndexError("min(): cannot compute the minimum over an empty dimension")
    xi = x  # dummy on the first pass
    has_idx = False
    while True:
        if inner == 1:
            block_i = 1
            block_l = min_(triton.next_power_of_2(L), 2048)
        else:
            block_i = min_(triton.next_power_of_2(inner), 64)
            block_l = max(1, min_(triton.next_power_of_2(L), 2048 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        base_programs = outer * n_ib
        splits = 1
        min_chunk = 4 * block_l
        if base_programs < _TARGET_PROGRAMS and L > min_chunk:
            splits = min_(triton.cdiv(_TARGET_PROGRAMS, base_programs), triton.cdiv(L, min_chunk))
        chunk = triton.cdiv(triton.cdiv(L, splits), block_l) * block_l
        splits = triton.cdiv(L, chunk)
        # the last pass writes the input's dtype; partial winners keep the comparison dtype
        v = torch.empty((outer, splits, inner), dtype=input_tensor.dtype if splits == 1 else val_dtype,
                        device=x.device)
        i = torch.empty((outer, splits, inner), dtype=torch.int64, device=x.device)
        _min_kernel[(outer * splits * n_ib,)](x, xi, v, i, L, inner, chunk, splits, n_ib, HAS_IDX=has_idx,
                                              IS_INT=is_int, VAL=val_tl, BLOCK_L=block_l, BLOCK_I=block_i,
                                              num_warps=4 if block_l * block_i <= 1024 else 8)
        if splits == 1:
            return (v.view(out_shape), i.view(out_shape))
        x, xi, L, has_idx = v, i, splits, True


def min_(a, b):
    return a if a < b else b
