import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program


@triton.jit
def _to_float(x, COMPUTE: tl.constexpr):
    # bfloat16 -> float32 by moving the bits: exact, subnormals included (what the GPU does; the CPU
    # interpreter's own bfloat16 conversion flushes subnormals to zero)
    if x.dtype == tl.bfloat16:
        return (x.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True).to(COMPUTE)
    else:
        return x.to(COMPUTE)


@triton.jit
def _div_op(a, b, MODE: tl.constexpr, FLOAT: tl.constexpr, COMPUTE: tl.constexpr):
    # MODE 0: true division, 1: 'trunc', 2: 'floor'
    if FLOAT:
        q = tl.div_rn(a, b)  # IEEE division (the plain '/' is an approximate one on the GPU)
        if MODE == 1:
            res = tl.where(q < 0, tl.ceil(q), tl.floor(q))  # ceil keeps -0.0 for -1 < q < 0
        elif MODE == 2:
            # floor of the exact quotient. The rounded quotient q lies in [n, n + 1] when the exact one
            # lies in [n, n + 1), so floor(q) is n or, when q rounded up onto an integer, n + 1; then
            # a - floor(q) * b (one fma, its sign exact) has the sign opposite to b, and we step down.
            res = tl.floor(q)
            r = tl.fma(-res, b, a)
            res = tl.where((r != 0) & ((r < 0) != (b < 0)), res - 1.0, res)
            res = tl.where(b == 0, q, res)  # division by zero: the IEEE quotient
        else:
            res = q
    else:
        if MODE == 1:
            res = a // b  # integer division truncates towards zero
        else:
            rem = a % b   # remainder with the sign of a
            res = a // b - ((rem != 0) & ((rem < 0) != (b < 0))).to(COMPUTE)
    return res


@triton.jit
def _div_kernel(x_ptr, y_ptr, out_ptr, y_value, D1, D2, n_rows, n_col_blocks,
                sx0, sx1, sx2, sy0, sy1, sy2,
                Y_SCALAR: tl.constexpr, MODE: tl.constexpr, FLOAT: tl.constexpr, COMPUTE: tl.constexpr,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # MODE 0: true division, 1: 'trunc', 2: 'floor'. The output is viewed as rows of length D2
    # (row r = i0 * D1 + i1); each operand is read through its own (possibly zero, i.e. broadcast)
    # strides, so no operand is ever materialized.
    pid = tl.program_id(0)
    rb = pid // n_col_blocks
    cb = pid % n_col_blocks
    rows = rb.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    i0 = rows // D1
    i1 = rows % D1
    mask = (rows < n_rows)[:, None] & (cols < D2)[None, :]
    x_off = (i0 * sx0 + i1 * sx1)[:, None] + cols[None, :] * sx2
    a = _to_float(tl.load(x_ptr + x_off, mask=mask), COMPUTE)
    if Y_SCALAR:
        b = tl.full(a.shape, y_value, COMPUTE)
    else:
        y_off = (i0 * sy0 + i1 * sy1)[:, None] + cols[None, :] * sy2
        b = _to_float(tl.load(y_ptr + y_off, mask=mask, other=1), COMPUTE)
    res = _div_op(a, b, MODE, FLOAT, COMPUTE)
    out_off = rows[:, None] * D2 + cols[None, :]
    tl.store(out_ptr + out_off, res.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _div_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR: tl.constexpr, MODE: tl.constexpr,
                    FLOAT: tl.constexpr, COMPUTE: tl.constexpr, offs, mask, other):
    a = _to_float(tl.load(x_ptr + offs, mask=mask), COMPUTE)
    if Y_SCALAR:
        b = tl.full(a.shape, y_value, COMPUTE)
    else:
        b = _to_float(tl.load(y_ptr + offs, mask=mask, other=other), COMPUTE)
    res = _div_op(a, b, MODE, FLOAT, COMPUTE)
    tl.store(out_ptr + offs, res.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _div_flat_kernel(x_ptr, y_ptr, out_ptr, y_value, n, Y_SCALAR: tl.constexpr, MODE: tl.constexpr,
                     FLOAT: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    # every operand walks the output densely: one flat index for all of them
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _div_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR, MODE, FLOAT, COMPUTE, offs, None, None)
    else:  # the last, partial block (divisor 1 in the lanes past the end)
        _div_flat_block(x_ptr, y_ptr, out_ptr, y_value, Y_SCALAR, MODE, FLOAT, COMPUTE, offs, offs < n, 1)


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


def div(input, other, rounding_mode=None, out=None):
    y_is_tensor = isinstance(other, torch.Tensor)
    res_dtype = torch.result_type(input, other)
    if rounding_mode is None and not (res_dtype.is_floating_point or res_dtype.is_complex):
        res_dtype = torch.get_default_dtype()  # true division of integers is a float
    mode = {None: 0, "trunc": 1, "floor": 2}[rounding_mode]
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
        is_float = res_dtype.is_floating_point
        if is_float:
            compute = tl.float64 if res_dtype == torch.float64 else tl.float32
        else:
            compute = tl.int64 if res_dtype == torch.int64 else tl.int32
        y_arg = ops[1] if y_is_tensor else ops[0]
        y_value = 0 if y_is_tensor else (float(other) if is_float else int(other))
        if len(merged) <= 1 and all(st == 1 for _, sts in merged for st in sts):  # all dense: one flat index
            _div_flat_kernel[(triton.cdiv(n, _TILE),)](ops[0], y_arg, target, y_value, n, Y_SCALAR=not y_is_tensor,
                                                       MODE=mode, FLOAT=is_float, COMPUTE=compute, BLOCK=_TILE,
                                                       num_warps=8)
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
            _div_kernel[grid](ops[0], y_arg, target, y_value, d1, d2, n_rows, n_cb, *sx, *sy,
                              Y_SCALAR=not y_is_tensor, MODE=mode, FLOAT=is_float, COMPUTE=compute,
                              BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    if target is not out:
        out.copy_(target)
    return out
