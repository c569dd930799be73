import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024   # enough programs to fill an H200 (132 SMs) several times over


@triton.jit
def _mean_kernel(x_ptr, y_ptr, L, inner, chunk, n_splits, n_inner_blocks, divisor, ACC: tl.constexpr,
                 BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Sum an (outer, L, inner) tensor over L, divided by `divisor` (1 for partial sums).

    Program (o, split, inner block) reduces rows [split*chunk, (split+1)*chunk) into y[o, split, cols];
    each lane accumulates sequentially in ACC (after converting its element), then a tree sum."""
    pid = tl.program_id(0)
    ib = pid % n_inner_blocks
    rest = pid // n_inner_blocks
    split = rest % n_splits
    o = rest // n_splits
    cols = ib.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = x_ptr + o.to(tl.int64) * L * inner + cols[None, :]
    lo = split * chunk
    hi = tl.minimum(lo + chunk, L)
    acc = tl.zeros([BLOCK_L, BLOCK_I], ACC)
    for start in range(lo, hi, BLOCK_L):
        r = start + tl.arange(0, BLOCK_L)
        mask = (r < hi)[:, None] & col_ok[None, :]
        v = tl.load(base + r[:, None].to(tl.int64) * inner, mask=mask, other=0)
        acc += v.to(ACC)
    total = tl.sum(acc, axis=0) / divisor   # 0 / 0 = NaN for an empty reduced dimension, as PyTorch
    out = y_ptr + (o.to(tl.int64) * n_splits + split) * inner + cols
    tl.store(out, total.to(y_ptr.dtype.element_ty), mask=col_ok)


def _reduce_middle(x, outer, L, inner, out_dtype, acc_dtype, divisor, final_out=None):
    """x viewed as (outer, L, inner) -> tensor (outer, inner) of sums / divisor (final_out if given)."""
    acc_tl = tl.float64 if acc_dtype == torch.float64 else tl.float32
    while True:
        if inner == 1:
            block_i = 1
            block_l = min(triton.next_power_of_2(max(L, 1)), 4096)
        else:
            block_i = min(triton.next_power_of_2(inner), 128)
            block_l = max(1, min(triton.next_power_of_2(max(L, 1)), 4096 // block_i))
        n_ib = triton.cdiv(inner, block_i)
        base_programs = outer * n_ib
        splits = 1
        min_chunk = 4 * block_l
        if base_programs < _TARGET_PROGRAMS and L > min_chunk:
            splits = min(triton.cdiv(_TARGET_PROGRAMS, base_programs), triton.cdiv(L, min_chunk))
        chunk = triton.cdiv(triton.cdiv(max(L, 1), splits), block_l) * block_l
        splits = triton.cdiv(max(L, 1), chunk)
        if splits == 1 and final_out is not None:
            y = final_out
        else:
            y = torch.empty((outer, splits, inner), dtype=out_dtype if splits == 1 else acc_dtype,
                            device=x.device)
        if y.numel():
            _mean_kernel[(outer * splits * n_ib,)](x, y, L, inner, chunk, splits, n_ib,
                                                   divisor if splits == 1 else 1.0, ACC=acc_tl,
                                                   BLOCK_L=block_l, BLOCK_I=block_i,
                                                   num_warps=4 if block_l * block_i <= 1024 else 8)
        if splits == 1:
            return y.view(outer, inner)
        x, L = y, splits  # reduce the partial sums (always in the accumulation dtype) once more


def mean(input_tensor, dim, keepdim=False, dtype=None, out=None):
    x = input_tensor.contiguous()
    out_dtype = dtype if dtype is not None else x.dtype
    if not out_dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype; give a floating dtype")
    acc_dtype = torch.float64 if out_dtype == torch.float64 else torch.float32
    nd = max(x.dim(), 1)
    dims = [dim] if isinstance(dim, int) else list(dim if dim is not None else ())
    red = sorted({d % nd for d in dims}) if dims else list(range(nd))  # dim=() / None: everything
    shape = list(x.shape) if x.dim() else [1]
    out_shape = [1 if i in red else s for i, s in enumerate(shape)]
    if not keepdim:
        out_shape = [s for i, s in enumerate(shape) if i not in red]
    if x.dim() == 0:
        out_shape = []
    count = 1
    for d in red:
        count *= shape[d]
    final = None
    if out is not None:
        if list(out.shape) != out_shape or out.dtype != out_dtype:
            raise RuntimeError("out has the wrong shape or dtype")
        if out.is_contiguous():
            final = out
    # groups of adjacent reduced dimensions, reduced from the innermost group outwards
    groups = []
    for d in red:
        if groups and groups[-1][1] == d - 1:
            groups[-1][1] = d
        else:
            groups.append([d, d])
    cur = x
    cur_shape = list(shape)
    for gi, (lo, hi) in enumerate(reversed(groups)):
        last = gi == len(groups) - 1
        outer = 1
        for s in cur_shape[:lo]:
            outer *= s
        L = 1
        for s in cur_shape[lo:hi + 1]:
            L *= s
        inner = 1
        for s in cur_shape[hi + 1:]:
            inner *= s
        cur = _reduce_middle(cur, outer, L, inner, out_dtype if last else acc_dtype, acc_dtype,
                             float(count) if last else 1.0, final if last else None)
        cur_shape = cur_shape[:lo] + [1] * (hi + 1 - lo) + cur_shape[hi + 1:]
    res = cur.reshape(out_shape)
    if out is not None:
        if final is None:
            out.copy_(res)
        return out
    return res
