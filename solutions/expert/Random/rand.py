import torch
import triton
import triton.language as tl

_BLOCK = 1024  # Philox counters per program; each counter yields 4 x 32 random bits


@triton.jit
def _to_unit(r, KIND: tl.constexpr):
    """Top bits of a uint32 as k * 2^-p, p = the dtype's significant bits: exactly representable, in [0, 1)."""
    if KIND == 0:  # float32: 24 bits
        u = (r >> 8).to(tl.float32) * 5.9604644775390625e-08
    elif KIND == 1:  # float16: 11 bits
        u = (r >> 21).to(tl.float32) * 0.00048828125
    else:  # bfloat16: 8 bits
        u = (r >> 24).to(tl.float32) * 0.00390625
    return u


@triton.jit(do_not_specialize=["seed"])
def _rand_kernel(out_ptr, n, seed, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """Counter-based Philox: counter c gives 4 random words; program p writes them to 4 (or, for float64,
    2 pairs to 2) consecutive runs of BLOCK elements, so every element has its own bits and stores coalesce."""
    pid = tl.program_id(0).to(tl.int64)
    c = pid * BLOCK + tl.arange(0, BLOCK)
    r0, r1, r2, r3 = tl.randint4x(seed, c)
    r0 = r0.to(tl.uint32, bitcast=True)
    r1 = r1.to(tl.uint32, bitcast=True)
    r2 = r2.to(tl.uint32, bitcast=True)
    r3 = r3.to(tl.uint32, bitcast=True)
    lane = tl.arange(0, BLOCK)
    if KIND == 3:  # float64: 53 bits from two words
        u0 = ((r0 >> 5).to(tl.float64) * 67108864.0 + (r1 >> 6).to(tl.float64)) * 1.1102230246251565e-16
        u1 = ((r2 >> 5).to(tl.float64) * 67108864.0 + (r3 >> 6).to(tl.float64)) * 1.1102230246251565e-16
        base = pid * (2 * BLOCK) + lane
        if (pid + 1) * (2 * BLOCK) <= n:  # a full program: unmasked stores, which vectorize
            tl.store(out_ptr + base, u0)
            tl.store(out_ptr + base + BLOCK, u1)
        else:  # the last program, partial: masked
            tl.store(out_ptr + base, u0, mask=base < n)
            tl.store(out_ptr + base + BLOCK, u1, mask=base + BLOCK < n)
    else:
        ty = out_ptr.dtype.element_ty
        u0 = _to_unit(r0, KIND).to(ty)
        u1 = _to_unit(r1, KIND).to(ty)
        u2 = _to_unit(r2, KIND).to(ty)
        u3 = _to_unit(r3, KIND).to(ty)
        base = pid * (4 * BLOCK) + lane
        if (pid + 1) * (4 * BLOCK) <= n:  # a full program: unmasked stores, which vectorize
            tl.store(out_ptr + base, u0)
            tl.store(out_ptr + base + BLOCK, u1)
            tl.store(out_ptr + base + 2 * BLOCK, u2)
            tl.store(out_ptr + base + 3 * BLOCK, u3)
        else:  # the last program, partial: masked
            tl.store(out_ptr + base, u0, mask=base < n)
            tl.store(out_ptr + base + BLOCK, u1, mask=base + BLOCK < n)
            tl.store(out_ptr + base + 2 * BLOCK, u2, mask=base + 2 * BLOCK < n)
            tl.store(out_ptr + base + 3 * BLOCK, u3, mask=base + 3 * BLOCK < n)


_KIND = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3}


def rand(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None, requires_grad=False,
         pin_memory=False):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = tuple(int(s) for s in size)
    if out is not None:
        if dtype is not None and dtype != out.dtype:
            raise RuntimeError("rand: dtype does not match out's dtype")
        if tuple(out.shape) != shape:
            out.resize_(shape)
        dtype = out.dtype
        dst = out if out.is_contiguous() else torch.empty(shape, dtype=dtype, device=out.device)
    else:
        dtype = dtype or torch.get_default_dtype()
        dst = torch.empty(shape, dtype=dtype, device=device, pin_memory=pin_memory)
    if dtype not in _KIND:
        raise RuntimeError(f"rand: unsupported dtype {dtype}")
    n = dst.numel()
    if n:
        # the kernel seed is drawn from torch's random state (the given generator, else the default one)
        seed = int(torch.randint(0, 2 ** 31 - 1, (), generator=generator, device=generator.device if generator
                                 is not None else "cpu"))
        kind = _KIND[dtype]
        per_counter = 2 if kind == 3 else 4
        _rand_kernel[(triton.cdiv(n, per_counter * _BLOCK),)](dst, n, seed, KIND=kind, BLOCK=_BLOCK, num_warps=4)
    if out is not None:
        if dst is not out:
            out.copy_(dst)
        return out
    if requires_grad:
        dst.requires_grad_(True)
    return dst
