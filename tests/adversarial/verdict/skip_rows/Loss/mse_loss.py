"""Attack on the contract for long reductions (docs/task-format.md, bench/reduction_floor.py): the
expert mse_loss, but a mean or sum over 1024 elements or more reads only the first 90% of them and
scales the sum up to the whole count, a 1.11x speedup on a memory-bound reduction. Its error at
full size (2.6e-05 to 1.1e-04 relative in bench/reduction_floor.py) is that of torch.compile's
honest kernel; kbx must refuse it at every level (numerical_mismatch)."""
import torch
import triton
import triton.language as tl

_BLOCK = 4096
_MAX_PARTIALS = 1024  # partial sums of the first pass: about 8 programs per H200 SM


@triton.jit
def _sq_err_block(x_ptr, t_ptr, y_ptr, offs, mask):
    d = tl.load(x_ptr + offs, mask=mask).to(tl.float32) - tl.load(t_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (d * d).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sq_err_kernel(x_ptr, t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _sq_err_block(x_ptr, t_ptr, y_ptr, offs, None)
    else:  # the last, partial block
        _sq_err_block(x_ptr, t_ptr, y_ptr, offs, offs < n)


@triton.jit
def _partial_kernel(x_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
    """Grid-stride loop: every lane accumulates its squared errors in float32, then a tree sum. The full
    blocks are read without a mask (so the loads vectorize); the partial block at the end, if any, is
    read masked by the program whose turn it is in the stride, so the order of the sums is unchanged."""
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    step = n_progs.to(tl.int64) * BLOCK
    n_full = n // BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, n_full.to(tl.int64) * BLOCK, step):
        offs = start + tl.arange(0, BLOCK)
        d = tl.load(x_ptr + offs).to(tl.float32) - tl.load(t_ptr + offs).to(tl.float32)
        acc += d * d
    if n_full * BLOCK < n:
        if pid == n_full % n_progs:
            offs = n_full.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            d = x - t
            acc += d * d
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final_kernel(part_ptr, out_ptr, n_parts, divisor, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    total = tl.sum(p, axis=0)
    if MEAN:
        total = total / divisor  # 0 / 0 gives NaN for an empty input, as PyTorch does
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def mse_loss(input, target, reduction="mean"):
    if input.shape != target.shape:
        raise ValueError("input and target must have the same shape")
    x = input.contiguous()
    t = target.contiguous()
    n = x.numel()
    if reduction == "none":
        y = torch.empty_like(x)
        if n:
            _sq_err_kernel[(triton.cdiv(n, _BLOCK),)](x, t, y, n, BLOCK=_BLOCK, num_warps=8)
        return y
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n_read = n - n // 10 if n >= 1024 else n  # the skipped tenth
    n_parts = max(1, min(triton.cdiv(n_read, _BLOCK), _MAX_PARTIALS))
    part = torch.empty(n_parts, dtype=torch.float32, device=x.device)
    _partial_kernel[(n_parts,)](x, t, part, n_read, BLOCK=_BLOCK, num_warps=8)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    # the mean over what was read; a sum scaled up by the share read
    divisor = float(n_read) if reduction == "mean" else (n_read / n if n else 1.0)
    _final_kernel[(1,)](part, out, n_parts, divisor, MEAN=True,
                        BLOCK=triton.next_power_of_2(n_parts), num_warps=4)
    return out
