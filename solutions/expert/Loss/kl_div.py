import torch
import triton
import triton.language as tl

_BLOCK = 4096
_MAX_PARTIALS = 1024  # partial sums of the first pass: about 8 programs per H200 SM


@triton.jit
def _kl(x_ptr, t_ptr, offs, mask, LOG_TARGET: tl.constexpr):
    """Per-element divergence in float32: exp(t) * (t - x), or xlogy(t, t) - t * x (0 where t == 0)."""
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if LOG_TARGET:
        return tl.exp(t) * (t - x)
    xlogy = tl.where(t == 0.0, 0.0, t * tl.log(t))
    return xlogy - t * x


@triton.jit
def _none_kernel(x_ptr, t_ptr, y_ptr, n, LOG_TARGET: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _kl(x_ptr, t_ptr, offs, mask, LOG_TARGET).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _partial_kernel(x_ptr, t_ptr, part_ptr, n, LOG_TARGET: tl.constexpr, BLOCK: tl.constexpr):
    """Grid-stride loop: every lane accumulates its terms in float32, then a tree sum."""
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        acc += tl.where(mask, _kl(x_ptr, t_ptr, offs, mask, LOG_TARGET), 0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final_kernel(part_ptr, out_ptr, n_parts, divisor, DIVIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(p, axis=0)
    if DIVIDE:
        total = total / divisor
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def kl_div(input, target, reduction="batchmean", log_target=False):
    if input.shape != target.shape:
        raise ValueError("input and target must have the same shape")
    x = input.contiguous()
    t = target.contiguous()
    n = x.numel()
    if reduction == "none":
        y = torch.empty_like(x)
        if n:
            _none_kernel[(triton.cdiv(n, _BLOCK),)](x, t, y, n, LOG_TARGET=log_target, BLOCK=_BLOCK, num_warps=8)
        return y
    if reduction == "sum":
        divisor = 1.0
    elif reduction == "mean":
        divisor = float(n)
    elif reduction == "batchmean":
        divisor = float(x.shape[0]) if x.dim() else 1.0
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n_parts = max(1, min(triton.cdiv(n, _BLOCK), _MAX_PARTIALS))
    part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _partial_kernel[(n_parts,)](x, t, part, n, LOG_TARGET=log_target, BLOCK=_BLOCK, num_warps=8)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _final_kernel[(1,)](part, out, n_parts, divisor, DIVIDE=reduction != "sum",
                        BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return out
