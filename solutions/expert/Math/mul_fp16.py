import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program


@triton.jit
def _mul_kernel(x_ptr, y_ptr, out_ptr, D1, D2, n_rows, n_col_blocks, sx0, sx1, sx2, sy0, sy1, sy2,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
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
    y_off = (i0 * sy0 + i1 * sy1)[:, None] + cols[None, :] * sy2
    x = tl.load(x_ptr + x_off, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + y_off, mask=mask).to(tl.float32)
    # the float32 product of two float16 values is exact: one rounding at the store gives the
    # correctly rounded float16 product (0 * inf = NaN, overflow to +-inf, signed zeros)
    out_off = rows[:, None] * D2 + cols[None, :]
    tl.store(out_ptr + out_off, (x * y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _mul_flat_block(x_ptr, y_ptr, out_ptr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _mul_flat_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # both operands walk the output densely: one flat index for all of them
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _mul_flat_block(x_ptr, y_ptr, out_ptr, offs, None)
    else:  # the last, partial block
        _mul_flat_block(x_ptr, y_ptr, out_ptr, offs, offs < n)


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


def mul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(input.shape, other.shape)
    out = torch.empty(shape, dtype=torch.result_type(input, other), device=input.device)
    n = out.numel()
    if n:
        ops = [input.expand(shape), other.expand(shape)]
        merged = _collapse(shape, [op.stride() for op in ops])
        if len(merged) > 3:  # rare layouts: fall back to dense copies of the broadcast operands
            ops = [op.contiguous() for op in ops]
            merged = [(n, [1, 1])]
        if len(merged) <= 1 and all(st == 1 for _, sts in merged for st in sts):  # all dense: one flat index
            _mul_flat_kernel[(triton.cdiv(n, _TILE),)](ops[0], ops[1], out, n, BLOCK=_TILE, num_warps=8)
        else:
            while len(merged) < 3:
                merged.insert(0, (1, [0, 0]))
            (d0, s0), (d1, s1), (d2, s2) = merged
            block_c = min(triton.next_power_of_2(d2), _TILE)
            block_r = max(1, _TILE // block_c)
            n_rows = d0 * d1
            n_cb = triton.cdiv(d2, block_c)
            grid = (triton.cdiv(n_rows, block_r) * n_cb,)
            _mul_kernel[grid](ops[0], ops[1], out, d1, d2, n_rows, n_cb, s0[0], s1[0], s2[0], s0[1], s1[1], s2[1],
                              BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    return out
