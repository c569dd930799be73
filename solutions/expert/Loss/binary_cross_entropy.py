import torch
import triton
import triton.language as tl

_BLOCK = 4096
_MAX_PARTIALS = 1024  # partial sums of the first pass: about 8 programs per H200 SM


@triton.jit
def _bce(x_ptr, t_ptr, w_ptr, start, offs, mask, W, W_MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Per-element loss in float32; W_MODE 0: no weight, 1: weight of the input's shape,
    2: weight repeating every W elements (broadcast over the leading dimensions)."""
    x = tl.load(x_ptr + offs, mask=mask, other=0.5).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    log_x = tl.maximum(tl.log(x), -100.0)
    log_1mx = tl.maximum(tl.log(1.0 - x), -100.0)
    loss = (t - 1.0) * log_1mx - t * log_x
    if W_MODE == 1:
        loss = loss * tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    elif W_MODE == 2:
        # one 64-bit modulo per block, 32-bit ones per element
        col = ((start % W).to(tl.int32) + tl.arange(0, BLOCK)) % W
        loss = loss * tl.load(w_ptr + col, mask=mask, other=0.0).to(tl.float32)
    return loss


@triton.jit
def _bce_none_kernel(x_ptr, t_ptr, w_ptr, y_ptr, n, W, W_MODE: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    loss = _bce(x_ptr, t_ptr, w_ptr, start, offs, mask, W, W_MODE, BLOCK)
    tl.store(y_ptr + offs, loss.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bce_partial_kernel(x_ptr, t_ptr, w_ptr, part_ptr, n, W, W_MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Grid-stride loop: every lane accumulates its losses in float32, then a tree sum."""
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        acc += tl.where(mask, _bce(x_ptr, t_ptr, w_ptr, start, offs, mask, W, W_MODE, BLOCK), 0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final_kernel(part_ptr, out_ptr, n_parts, divisor, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(p, axis=0)
    if MEAN:
        total = total / divisor  # 0 / 0 gives NaN for an empty input, as PyTorch does
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    if input.shape != target.shape:
        raise ValueError("Using a target size that is different to the input size is deprecated")
    x = input.contiguous()
    t = target.contiguous()
    n = x.numel()
    w_mode, W, w = 0, 1, x
    if weight is not None:
        wshape = list(weight.shape)
        while wshape and wshape[0] == 1:
            wshape.pop(0)
        if list(weight.shape) == list(x.shape):
            w_mode, w = 1, weight.contiguous()
        elif len(wshape) <= x.dim() and wshape == list(x.shape)[x.dim() - len(wshape):]:
            w_mode, W, w = 2, max(weight.numel(), 1), weight.contiguous()   # repeats over leading dims
        else:
            w_mode, w = 1, weight.expand(x.shape).contiguous()   # unusual broadcast: materialise it
    if reduction == "none":
        y = torch.empty_like(x)
        if n:
            _bce_none_kernel[(triton.cdiv(n, _BLOCK),)](x, t, w, y, n, W, W_MODE=w_mode, BLOCK=_BLOCK, num_warps=8)
        return y
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n_parts = max(1, min(triton.cdiv(n, _BLOCK), _MAX_PARTIALS))
    part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _bce_partial_kernel[(n_parts,)](x, t, w, part, n, W, W_MODE=w_mode, BLOCK=_BLOCK, num_warps=8)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _final_kernel[(1,)](part, out, n_parts, float(n), MEAN=reduction == "mean",
                        BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return out
