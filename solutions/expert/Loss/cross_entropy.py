import torch
import triton
import triton.language as tl

_TILE = 4096          # logits per tile
_FINAL_BLOCK = 1024


@triton.jit
def _ce_kernel(x_ptr, t_ptr, w_ptr, y_ptr, part_ptr, wpart_ptr, P, C, S, CS, ignore_index,
               SPATIAL: tl.constexpr, HAS_W: tl.constexpr, REDUCE: tl.constexpr,
               BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    """Cross entropy of BLOCK_P positions: an online, max-subtracted logsumexp over the classes in
    tiles [BLOCK_C, BLOCK_P], then w[t] * (lse - x[t]). Position p = n * S + s; class c of it is at
    n * C * S + c * S + s. REDUCE stores the block's sums of losses and weights, else each loss."""
    pid = tl.program_id(0)
    p = pid.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    p_ok = p < P
    if SPATIAL:
        base = (p // S) * CS + (p % S)
    else:
        base = p * CS
    t = tl.load(t_ptr + p, mask=p_ok, other=ignore_index)
    keep = p_ok & (t != ignore_index)   # ignored positions read no logits
    m = tl.full([BLOCK_P], float("-inf"), tl.float32)
    ssum = tl.zeros([BLOCK_P], tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (c < C)[:, None] & keep[None, :]
        x = tl.load(x_ptr + base[None, :] + c[:, None].to(tl.int64) * S, mask=mask,
                    other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # all -inf so far: keep exp finite
        ssum = ssum * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[None, :]), axis=0)
        m = m_new
    tc = tl.where(keep, t, 0).to(tl.int64)
    xt = tl.load(x_ptr + base + tc * S, mask=keep, other=0.0).to(tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + tc, mask=keep, other=0.0).to(tl.float32)
    else:
        w = tl.where(keep, 1.0, 0.0)
    # -log_softmax(x)[t] = (max - x[t]) + log(sum exp(x - max))
    loss = tl.where(keep, w * ((m - xt) + tl.log(ssum)), 0.0)
    if REDUCE:
        tl.store(part_ptr + pid, tl.sum(loss, axis=0))
        tl.store(wpart_ptr + pid, tl.sum(w, axis=0))
    else:
        tl.store(y_ptr + p, loss.to(y_ptr.dtype.element_ty), mask=p_ok)


@triton.jit
def _final_kernel(part_ptr, wpart_ptr, out_ptr, n_parts, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    wacc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
        wacc += tl.load(wpart_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:  # divided by the total weight of the counted positions: 0 / 0 = NaN when none counts
        total = total / tl.sum(wacc, axis=0)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean"):
    x = input.contiguous()
    t = target.contiguous()
    if x.dim() == 1:  # one sample: (C,) logits, 0-d target
        C, S = x.shape[0], 1
    else:
        C = x.shape[1]
        S = 1
        for s in x.shape[2:]:
            S *= s
    P = t.numel()
    has_w = weight is not None
    w = weight.contiguous() if has_w else x
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    block_c = min(triton.next_power_of_2(max(C, 1)), _TILE)
    block_p = max(1, min(_TILE // block_c, triton.next_power_of_2(max(P, 1))))
    grid = triton.cdiv(P, block_p)
    reduce = reduction != "none"
    if reduce:
        part = torch.empty((2, max(grid, 1)), dtype=torch.float32, device=x.device)
        y = x
    else:
        y = torch.empty(t.shape, dtype=x.dtype, device=x.device)
        part = y
    if grid:
        _ce_kernel[(grid,)](x, t, w, y, part[0] if reduce else y, part[1] if reduce else y, P, C, S, C * S,
                            ignore_index, SPATIAL=S > 1, HAS_W=has_w, REDUCE=reduce, BLOCK_C=block_c,
                            BLOCK_P=block_p, num_warps=8 if block_c * block_p >= 2048 else 4)
    if not reduce:
        return y
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _final_kernel[(1,)](part[0], part[1], out, grid, MEAN=reduction == "mean", BLOCK=_FINAL_BLOCK, num_warps=4)
    return out
