import torch
import triton
import triton.language as tl

_BLOCK = 2048
_MAX_PARTIALS = 1024  # partial sums of the first pass: about 8 programs per H200 SM


@triton.jit
def _nll(x_ptr, t_ptr, w_ptr, p, mask, S, CS, ignore_index, SPATIAL: tl.constexpr, HAS_W: tl.constexpr):
    """Loss and weight of positions p (float32): -w[t] * x[n, t, s], both 0 where t == ignore_index."""
    t = tl.load(t_ptr + p, mask=mask, other=ignore_index)
    keep = mask & (t != ignore_index)
    tc = tl.where(keep, t, 0).to(tl.int64)
    if SPATIAL:  # p = n * S + s, element (n, t, s) at n * C * S + t * S + s
        off = (p // S) * CS + (p % S) + tc * S
    else:
        off = p * CS + tc
    x = tl.load(x_ptr + off, mask=keep, other=0.0).to(tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + tc, mask=keep, other=0.0).to(tl.float32)
    else:
        w = tl.where(keep, 1.0, 0.0)
    loss = tl.where(keep, -(w * x), 0.0)
    return loss, w


@triton.jit
def _none_kernel(x_ptr, t_ptr, w_ptr, y_ptr, P, S, CS, ignore_index, SPATIAL: tl.constexpr, HAS_W: tl.constexpr,
                 BLOCK: tl.constexpr):
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = p < P
    loss, w = _nll(x_ptr, t_ptr, w_ptr, p, mask, S, CS, ignore_index, SPATIAL, HAS_W)
    tl.store(y_ptr + p, loss.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _partial_kernel(x_ptr, t_ptr, w_ptr, part_ptr, wpart_ptr, P, S, CS, ignore_index, SPATIAL: tl.constexpr,
                    HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    """Grid-stride loop: each lane accumulates losses and weights in float32, then a tree sum."""
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    wacc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, P, step):
        p = start + tl.arange(0, BLOCK)
        loss, w = _nll(x_ptr, t_ptr, w_ptr, p, p < P, S, CS, ignore_index, SPATIAL, HAS_W)
        acc += loss
        wacc += w
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))
    tl.store(wpart_ptr + pid, tl.sum(wacc, axis=0))


@triton.jit
def _final_kernel(part_ptr, wpart_ptr, out_ptr, n_parts, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.sum(tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0), axis=0)
    if MEAN:  # divided by the total weight of the counted positions: 0 / 0 = NaN when none counts
        total = total / tl.sum(tl.load(wpart_ptr + offs, mask=offs < n_parts, other=0.0), axis=0)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    x = input.contiguous()
    t = target.contiguous()
    if x.dim() == 1:  # one sample: (C,) scores, 0-d target
        C, S = x.shape[0], 1
    else:
        C = x.shape[1]
        S = 1
        for s in x.shape[2:]:
            S *= s
    P = t.numel()
    spatial = S > 1
    has_w = weight is not None
    w = weight.contiguous() if has_w else x
    if reduction == "none":
        y = torch.empty(t.shape, dtype=x.dtype, device=x.device)
        if P:
            _none_kernel[(triton.cdiv(P, _BLOCK),)](x, t, w, y, P, S, C * S, ignore_index, SPATIAL=spatial,
                                                    HAS_W=has_w, BLOCK=_BLOCK, num_warps=8)
        return y
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n_parts = max(1, min(triton.cdiv(P, _BLOCK), _MAX_PARTIALS))
    part = torch.empty((2, n_parts), dtype=torch.float32, device=x.device)
    _partial_kernel[(n_parts,)](x, t, w, part[0], part[1], P, S, C * S, ignore_index, SPATIAL=spatial,
                                HAS_W=has_w, BLOCK=_BLOCK, num_warps=8)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _final_kernel[(1,)](part[0], part[1], out, n_parts, MEAN=reduction == "mean",
                        BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return out
