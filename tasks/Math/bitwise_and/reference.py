import torch

from kbx_worker.casegen import Case

_RANGES = {torch.int8: (-128, 128), torch.uint8: (0, 256), torch.int32: (-2**31, 2**31),
           torch.int64: (-2**62, 2**62)}


def bitwise_and(input, other, out=None):
    return torch.bitwise_and(input, other, out=out)


def _bits(c, dtype, *shape):
    """Integers spread over the whole range of the dtype (all bit patterns likely)."""
    if dtype == torch.bool:
        return c.bernoulli(*shape)
    lo, hi = _RANGES[dtype]
    return c.randint(lo, hi, *shape, dtype=dtype)


def _sparse(c, dtype, *shape):
    """Integers with few bits set: single powers of two or zero."""
    k = c.randint(0, 8 * dtype.itemsize - 1, *shape)
    keep = c.bernoulli(*shape, p=0.7)
    return torch.where(keep, torch.bitwise_left_shift(torch.ones_like(k), k), torch.zeros_like(k)).to(dtype)


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def _two_bits(dtype, *shape):
    """Two independent full-range tensors of one dtype and shape."""
    return _pair(lambda c: _bits(c, dtype, *shape), lambda c: _bits(c, dtype, *shape))


def _with_out(c):
    a, b = _bits(c, torch.int32, 257, 33), _bits(c, torch.int32, 257, 33)
    return (a, b), {"out": _bits(c, torch.int32, 257, 33)}


def _edge_ints(c):
    vals = [0, -1, 1, 2**31 - 1, -2**31, 0x55555555, -0x55555556, 255, 256, -256]
    t = torch.tensor(vals, dtype=torch.int32, device=c.device)
    return (t.reshape(-1, 1), t.reshape(1, -1)), {}


def cases():
    return [
        Case("edge_outer_int32", "edge", _edge_ints),
        Case("bool_table", "edge", lambda c: ((
            torch.tensor([True, True, False, False], device=c.device),
            torch.tensor([True, False, True, False], device=c.device)), {})),
        Case("empty_int32", "edge", _two_bits(torch.int32, 0, 7)),
        Case("scalar_other_int32", "edge",
             _pair(lambda c: _bits(c, torch.int32, 1000),
                   lambda c: torch.tensor(0x0F0F, dtype=torch.int32, device=c.device))),
        Case("out_int32", "edge", _with_out, dist="bits"),
        Case("bits_int32", "small", _two_bits(torch.int32, 1000, 37), dist="bits"),
        Case("bits_int64", "small", _two_bits(torch.int64, 4099), dist="bits"),
        Case("bits_int8", "small", _two_bits(torch.int8, 333, 65), dist="bits"),
        Case("small_uint8", "small",
             _pair(lambda c: c.randint(0, 16, 4097, dtype=torch.uint8),
                   lambda c: c.randint(0, 256, 4097, dtype=torch.uint8)),
             dist="uniform"),
        Case("sparse_int32", "small",
             _pair(lambda c: _sparse(c, torch.int32, 7919), lambda c: _bits(c, torch.int32, 7919)), dist="sparse"),
        Case("bool", "small", _two_bits(torch.bool, 3, 5, 1021), dist="bits"),
        Case("broadcast_mask_int32", "small",
             _pair(lambda c: _bits(c, torch.int32, 257, 61), lambda c: _sparse(c, torch.int32, 61)), dist="sparse"),
        Case("mixed_int32_int64", "small",
             _pair(lambda c: _bits(c, torch.int32, 2053), lambda c: _bits(c, torch.int64, 2053)), dist="bits"),
        Case("perf_int32_64M", "full", _two_bits(torch.int32, 8192, 8192), dist="bits"),
        Case("perf_int64_16M", "full", _two_bits(torch.int64, 4096, 4096), dist="bits"),
        Case("perf_uint8_odd_row_mask", "full",
             _pair(lambda c: _bits(c, torch.uint8, 12289, 3001), lambda c: _bits(c, torch.uint8, 3001)), dist="bits"),
        Case("perf_bool_64M", "full", _two_bits(torch.bool, 8192, 8192), dist="bits"),
    ]


def cost(input, other, out=None):
    n = torch.broadcast_shapes(input.shape, other.shape).numel()
    dtype = torch.result_type(input, other)
    return {"flops": n, "bytes": input.numel() * input.element_size() + other.numel() * other.element_size()
            + n * dtype.itemsize}
