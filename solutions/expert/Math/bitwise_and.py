import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program

_TL = {torch.bool: tl.int1, torch.int8: tl.int8, torch.uint8: tl.uint8, torch.int16: tl.int16,
       torch.int32: tl.int32, torch.int64: tl.int64}


@triton.jit
def _and_kernel(x_ptr, y_ptr, out_ptr, y_value, D1, D2, n_rows, n_col_blocks,
                sx0, sx1, sx2, sy0, sy1, sy2,
                Y_SCALAR: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # The output is viewed as rows of length D2 (row r = i0 * D1 + i1); each operand is read through
    # its own (possibly zero, i.e. broadcast) strides, so no operand is ever materialized.
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    i0 = rows // D1
    i1 = rows % D1
    mask = (rows < n_rows)[:, None] & (cols < D2)[None, :]
    x_off = (i0 * sx0 + i1 * sx1)[:, None] + cols[None, :] * sx2
    # operands are converted to the promoted dtype first (sign extension for int32 & int64)
    x = tl.load(x_ptr + x_off, mask=mask).to(COMPUTE)
    if Y_SCALAR:
        y = y_value.to(COMPUTE)
    else:
        y_off = (i0 * sy0 + i1 * sy1)[:, None] + cols[None, :] * sy2
        y = tl.load(y_ptr + y_off, mask=mask).to(COMPUTE)
    out_off = rows[:, None] * D2 + cols[None, :]
    tl.store(out_ptr + out_off, x & y, mask=mask)


@triton.jit
def _and_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR: tl.constexpr, COMPUTE: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(COMPUTE)
    if Y_SCALAR:
        y = y_value.to(COMPUTE)
    else:
        y = tl.load(y_ptr + offs, mask=mask).to(COMPUTE)
    tl.store(out_ptr + offs, x & y, mask=mask)


@triton.jit
def _and_flat_kernel(x_ptr, y_ptr, out_ptr, y_value, n, Y_SCALAR: tl.constexpr, COMPUTE: tl.constexpr,
                     BLOCK: tl.constexpr):
    # every operand walks the output densely: one flat index for all of them
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _and_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR, COMPUTE, offs, None)
    else:  # the last, partial block
        _and_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR, COMPUTE, offs, offs < n)


def _collapse(shape, strides):
    """Merge output dimensions that every operand walks contiguously; drop size-1 dimensions."""
    dims = [(s, [st[i] for st in strides]) for i, s in enumerate(shape) if s != 1]
    merged = []
    for size, st in dims:
        if merged and all(ps == s * size for ps, s in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * size, st)
        else:
            merged.append((size, st))
    return merged


def bitwise_and(input, other, out=None):
    y_is_tensor = isinstance(other, torch.Tensor)
    res_dtype = torch.result_type(input, other)
    shape = torch.broadcast_shapes(input.shape, other.shape if y_is_tensor else ())
    if out is None:
        out = torch.empty(shape, dtype=res_dtype, device=input.device)
    target = out if out.is_contiguous() else torch.empty(shape, dtype=out.dtype, device=input.device)
    n = target.numel()
    if n:
        ops = [input.expand(shape)] + ([other.expand(shape)] if y_is_tensor else [])
        merged = _collapse(shape, [op.stride() for op in ops])
        if len(merged) > 3:  # rare layouts: fall back to dense copies of the broadcast operands
            ops = [op.contiguous() for op in ops]
            merged = [(n, [1] * len(ops))]
        y_arg = ops[1] if y_is_tensor else ops[0]
        y_value = 0 if y_is_tensor else int(other)
        if len(merged) <= 1 and all(st == 1 for _, sts in merged for st in sts):  # all dense: one flat index
            _and_flat_kernel[(triton.cdiv(n, _TILE),)](ops[0], y_arg, target, y_value, n, Y_SCALAR=not y_is_tensor,
                                                       COMPUTE=_TL[res_dtype], BLOCK=_TILE, num_warps=8)
        else:
            while len(merged) < 3:
                merged.insert(0, (1, [0] * len(ops)))
            (d0, s0), (d1, s1), (d2, s2) = merged
            sx = (s0[0], s1[0], s2[0])
            sy = (s0[1], s1[1], s2[1]) if y_is_tensor else (0, 0, 0)
            block_c = min(triton.next_power_of_2(d2), _TILE)
            block_r = max(1, _TILE // block_c)
            n_rows = d0 * d1
            n_cb = triton.cdiv(d2, block_c)
            grid = (triton.cdiv(n_rows, block_r) * n_cb,)
            _and_kernel[grid](ops[0], y_arg, target, y_value, d1, d2, n_rows, n_cb, *sx, *sy,
                              Y_SCALAR=not y_is_tensor, COMPUTE=_TL[res_dtype],
                              BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    if target is not out:
        out.copy_(target)
    return out
