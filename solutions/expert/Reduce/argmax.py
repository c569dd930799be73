import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024
_NONE = tl.constexpr(2**62)  # "no index yet"


@triton.jit
def _to_val(v, VAL: tl.constexpr):
    if v.dtype == tl.bfloat16:
        # exact bf16 -> fp32 by moving the bits (also right for subnormals, which some conversion
        # paths, e.g. the Triton CPU interpreter, get wrong)
        bits = v.to(tl.int16, bitcast=True).to(tl.int32) << 16
        return bits.to(tl.float32, bitcast=True).to(VAL)
    return v.to(VAL)


@triton.jit
def _argmax_kernel(x_ptr, xi_ptr, v_ptr, i_ptr, L, inner, chunk, n_splits, n_inner_blocks,
                   HAS_IDX: tl.constexpr, VAL: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Argmax of an (outer, L, inner) tensor over L, for rows [split*chunk, (split+1)*chunk).

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
        # each lane sees increasing indices: replace only on a strictly larger value, or a first NaN
        take = mask & ((best_i == _NONE) | (v > best_v) | ((v != v) & (best_v == best_v)))
        best_v = tl.where(take, v, best_v)
        best_i = tl.where(take, idx, best_i)
    valid = best_i != _NONE
    is_nan = valid & (best_v != best_v)
    any_nan = tl.max(is_nan.to(tl.int32), axis=0)
    vmax = tl.max(tl.where(valid & ~is_nan, best_v, float("-inf")), axis=0)
    winner = tl.where(any_nan[None, :] > 0, is_nan, valid & (best_v == vmax[None, :]))
    res_i = tl.min(tl.where(winner, best_i, _NONE), axis=0)
    res_v = tl.where(any_nan > 0, float("nan"), vmax)
    out = (o.to(tl.int64) * n_splits + split) * inner + cols
    tl.store(i_ptr + out, res_i, mask=col_ok)
    tl.store(v_ptr + out, res_v.to(v_ptr.dtype.element_ty), mask=col_ok)


def _argmax_middle(x, outer, L, inner, val_dtype):
    """x viewed as (outer, L > 0, inner) -> int64 indices of shape (outer, inner)."""
    val_tl = tl.float64 if val_dtype == torch.float64 else tl.float32
    xi = x  # dummy on the first pass
    has_idx = False
    while True:
        if inner == 1:
            block_i = 1
            block_l = min(triton.next_power_of_2(L), 2048)
        else:
            block_i = min(triton.next_power_of_2(inner), 64)
            block_l = max(1, min(triton.next_power_of_2(L), 2048 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        base_programs = outer * n_ib
        splits = 1
        min_chunk = 4 * block_l
        if base_programs < _TARGET_PROGRAMS and L > min_chunk:
            splits = min(triton.cdiv(_TARGET_PROGRAMS, base_programs), triton.cdiv(L, min_chunk))
        chunk = triton.cdiv(triton.cdiv(L, splits), block_l) * block_l
        splits = triton.cdiv(L, chunk)
        v = torch.empty((outer, splits, inner), dtype=val_dtype, device=x.device)
        i = torch.empty((outer, splits, inner), dtype=torch.int64, device=x.device)
        _argmax_kernel[(outer * splits * n_ib,)](x, xi, v, i, L, inner, chunk, splits, n_ib, HAS_IDX=has_idx,
                                                  VAL=val_tl, BLOCK_L=block_l, BLOCK_I=block_i,
                                                  num_warps=4 if block_l * block_i <= 1024 else 8)
        if splits == 1:
            return i.view(outer, inner)
        x, xi, L, has_idx = v, i, splits, True


def argmax(input_tensor, dim, keepdim=False):
    x = input_tensor.contiguous()
    val_dtype = torch.float32 if x.dtype in (torch.float32, torch.float16, torch.bfloat16) else torch.float64
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError("argmax of an empty tensor")
        out_shape = [1] * x.dim() if keepdim else []
        outer, L, inner = 1, x.numel(), 1
    else:
        shape = list(x.shape) if x.dim() else [1]
        d = dim % len(shape)
        L = shape[d]
        outer = 1
        for s in shape[:d]:
            outer *= s
        inner = 1
        for s in shape[d + 1:]:
            inner *= s
        if keepdim:
            out_shape = shape[:d] + [1] + shape[d + 1:]
        else:
            out_shape = shape[:d] + shape[d + 1:]
        if x.dim() == 0:
            out_shape = []
        if L == 0:
            raise RuntimeError("argmax over an empty dimension")
    if outer * inner == 0:
        return torch.empty(out_shape, dtype=torch.int64, device=x.device)
    return _argmax_middle(x, outer, L, inner, val_dtype).reshape(out_shape)
