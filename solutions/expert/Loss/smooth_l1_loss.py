import torch
import triton
import triton.language as tl

_BLOCK = 4096
_MAX_PARTIALS = 1024  # partial sums of the first pass: about 8 programs per H200 SM


@triton.jit
def _smooth_l1(x_ptr, t_ptr, offs, mask, beta, half_beta, L1: tl.constexpr):
    """Per-element loss in float32 (as PyTorch: 0.5 * z * z / beta below beta, z - 0.5 * beta above)."""
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    z = tl.abs(x - t)
    if L1:  # beta == 0: plain |d|, no division by zero
        return z
    return tl.where(z < beta, 0.5 * z * z / beta, z - half_beta)


@triton.jit
def _none_kernel(x_ptr, t_ptr, y_ptr, n, beta, half_beta, L1: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    loss = _smooth_l1(x_ptr, t_ptr, offs, mask, beta, half_beta, L1)
    tl.store(y_ptr + offs, loss.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _partial_kernel(x_ptr, t_ptr, part_ptr, n, beta, half_beta, L1: tl.constexpr, BLOCK: tl.constexpr):
    """Grid-stride loop: every lane accumulates its losses in float32, then a tree sum."""
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        acc += tl.where(mask, _smooth_l1(x_ptr, t_ptr, offs, mask, beta, half_beta, L1), 0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final_kernel(part_ptr, out_ptr, n_parts, divisor, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(p, axis=0)
    if MEAN:
        total = total / divisor  # 0 / 0 gives NaN for an empty input, as PyTorch does
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def smooth_l1_loss(input, target, beta=1.0, reduction="mean"):
    if input.shape != target.shape:
        raise ValueError("input and target must have the same shape")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta")
    x = input.contiguous()
    t = target.contiguous()
    n = x.numel()
    beta = float(beta)
    l1 = beta == 0.0
    args = (beta if not l1 else 1.0, 0.5 * beta)
    if reduction == "none":
        y = torch.empty_like(x)
        if n:
            _none_kernel[(triton.cdiv(n, _BLOCK),)](x, t, y, n, *args, L1=l1, BLOCK=_BLOCK, num_warps=8)
        return y
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n_parts = max(1, min(triton.cdiv(n, _BLOCK), _MAX_PARTIALS))
    part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _partial_kernel[(n_parts,)](x, t, part, n, *args, L1=l1, BLOCK=_BLOCK, num_warps=8)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _final_kernel[(1,)](part, out, n_parts, float(n), MEAN=reduction == "mean",
                        BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return out
