import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024   # enough programs to fill an H200 (132 SMs) several times over


@triton.jit
def _sum_kernel(x_ptr, y_ptr, L, inner, chunk, n_splits, n_inner_blocks, ACC: tl.constexpr,
                BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr):
    """Sum an (outer, L, inner) tensor over L. Program (o, split, inner block) reduces rows
    [split*chunk, (split+1)*chunk) into y[o, split, cols]; lanes accumulate sequentially, then a tree."""
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
    total = tl.sum(acc, axis=0)
    out = y_ptr + (o.to(tl.int64) * n_splits + split) * inner + cols
    tl.store(out, total.to(y_ptr.dtype.element_ty), mask=col_ok)


def _reduce_middle(x, outer, L, inner, out_dtype, acc_dtype):
    """x viewed as (outer, L, inner) -> tensor of shape (outer, inner) in out_dtype."""
    acc_tl = {torch.float32: tl.float32, torch.float64: tl.float64, torch.int64: tl.int64}[acc_dtype]
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
        dtype = out_dtype if splits == 1 else acc_dtype
        y = torch.empty((outer, splits, inner), dtype=dtype, device=x.device)
        if y.numel():
            _sum_kernel[(outer * splits * n_ib,)](x, y, L, inner, chunk, splits, n_ib, ACC=acc_tl,
                                                  BLOCK_L=block_l, BLOCK_I=block_i,
                                                  num_warps=4 if block_l * block_i <= 1024 else 8)
        if splits == 1:
            return y.view(outer, inner)
        x, L = y, splits  # reduce the partial sums (always in the accumulation dtype) once more


def sum(input, dim, keepdim=False, dtype=None):
    x = input.contiguous()
    if dtype is not None:
        out_dtype = dtype
    elif x.dtype.is_floating_point or x.dtype.is_complex:
        out_dtype = x.dtype
    else:
        out_dtype = torch.int64
    if out_dtype == torch.float64:
        acc_dtype = torch.float64
    elif out_dtype.is_floating_point:
        acc_dtype = torch.float32
    else:
        acc_dtype = torch.int64
    nd = max(x.dim(), 1)
    dims = [dim] if isinstance(dim, int) else list(dim)
    red = sorted({d % nd for d in dims}) if dims else list(range(nd))  # dim=() reduces everything
    shape = list(x.shape) if x.dim() else [1]
    out_shape = [1 if i in red else s for i, s in enumerate(shape)]
    if not keepdim:
        out_shape = [s for i, s in enumerate(shape) if i not in red]
    if x.dim() == 0:
        out_shape = []
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
        cur = _reduce_middle(cur, outer, L, inner, out_dtype if last else acc_dtype, acc_dtype)
        cur_shape = cur_shape[:lo] + [1] * (hi + 1 - lo) + cur_shape[hi + 1:]
    if not groups:
        cur = _reduce_middle(cur, cur.numel(), 1, 1, out_dtype, acc_dtype)
    return cur.reshape(out_shape)
