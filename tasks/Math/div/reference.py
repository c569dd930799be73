import torch

from kbx_worker.casegen import Case


def div(input, other, rounding_mode=None, out=None):
    return torch.div(input, other, rounding_mode=rounding_mode, out=out)


def _outer(c, dtype, mode, inf=True):
    """Every special value divided by every special value, as an (n, 1) and a (1, n) tensor."""
    s = c.special(dtype, inf=inf)
    return (s.reshape(-1, 1), s.reshape(1, -1)), {"rounding_mode": mode}


def _away_from_zero(c, *shape, dtype=torch.float32):
    x = c.randn(*shape)
    return (torch.sign(x) * x.abs().clamp(min=1e-2) + (x == 0) * 1e-2).to(dtype)


def _pair(make_a, make_b, mode=None):
    return lambda c: ((make_a(c), make_b(c)), {"rounding_mode": mode})


def _near_multiples(c, n, mode):
    """a = k * b rounded to float32, so that a / b is within an ulp or two of the integer k."""
    b = c.uniform(n, low=0.1, high=10) * torch.where(c.bernoulli(n), 1.0, -1.0)
    k = c.randint(-1000, 1000, n).to(torch.float32)
    a = (k.double() * b.double()).float()
    return (a, b), {"rounding_mode": mode}


def _ints(c, shape, dtype, mode):
    a = c.randint(-100000, 100000, *shape, dtype=dtype)
    b = c.randint(1, 1000, *shape, dtype=dtype) * torch.where(c.bernoulli(*shape), 1, -1).to(dtype)
    return (a, b), {"rounding_mode": mode}


def _with_out(c):
    a, b = c.randn(257, 33), _away_from_zero(c, 257, 33)
    return (a, b), {"out": c.randn(257, 33)}


def cases():
    return [
        Case("special_outer_f32", "edge", lambda c: _outer(c, torch.float32, None)),
        Case("special_outer_f32_trunc", "edge", lambda c: _outer(c, torch.float32, "trunc")),
        Case("special_outer_f32_floor", "edge", lambda c: _outer(c, torch.float32, "floor", inf=False)),
        Case("special_outer_f16", "edge", lambda c: _outer(c, torch.float16, None)),
        Case("special_outer_bf16_floor", "edge", lambda c: _outer(c, torch.bfloat16, "floor", inf=False)),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 7), lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _pair(lambda c: c.randn(()), lambda c: c.uniform((), low=1, high=2))),
        Case("out_f32", "edge", _with_out, dist="normal"),
        Case("normal_f32", "small", _pair(lambda c: c.randn(1000, 37), lambda c: _away_from_zero(c, 1000, 37)),
             dist="normal"),
        Case("broadcast_row_f32", "small",
             _pair(lambda c: c.randn(257, 61), lambda c: _away_from_zero(c, 61)), dist="normal"),
        Case("python_scalar_f32", "small", _pair(lambda c: c.randn(3, 5, 1021), lambda c: 3.0), dist="normal"),
        Case("uniform_f32_floor", "small",
             _pair(lambda c: c.uniform(7919, low=-100, high=100), lambda c: _away_from_zero(c, 7919), "floor"),
             dist="uniform"),
        Case("uniform_f32_trunc", "small",
             _pair(lambda c: c.uniform(4099, low=-100, high=100), lambda c: _away_from_zero(c, 4099), "trunc"),
             dist="uniform"),
        Case("near_multiples_floor", "small", lambda c: _near_multiples(c, 5003, "floor"), dist="multiples"),
        Case("outliers_f32", "small", _pair(lambda c: c.outliers(4097), lambda c: c.outliers(4097)),
             dist="outliers"),
        Case("normal_f16", "small",
             _pair(lambda c: c.randn(4097, dtype=torch.float16),
                   lambda c: _away_from_zero(c, 4097, dtype=torch.float16)),
             dist="normal"),
        Case("outliers_bf16", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=torch.bfloat16),
                   lambda c: _away_from_zero(c, 333, 65, dtype=torch.bfloat16)), dist="outliers"),
        Case("int32_floor", "small", lambda c: _ints(c, (61, 129), torch.int32, "floor"), dist="uniform"),
        Case("int64_trunc", "small", lambda c: _ints(c, (4099,), torch.int64, "trunc"), dist="uniform"),
        Case("int32_true_div", "small", lambda c: _ints(c, (2053,), torch.int32, None), dist="uniform"),
        Case("perf_f32_64M", "full",
             _pair(lambda c: c.randn(8192, 8192), lambda c: _away_from_zero(c, 8192, 8192)), dist="normal"),
        Case("perf_f32_64M_row_broadcast", "full",
             _pair(lambda c: c.randn(8192, 8192), lambda c: _away_from_zero(c, 8192)), dist="normal"),
        Case("perf_bf16_64M", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16),
                   lambda c: _away_from_zero(c, 8192, 8192, dtype=torch.bfloat16)), dist="normal"),
        Case("perf_f32_odd_floor", "full",
             _pair(lambda c: c.randn(12289, 3001, std=100.0), lambda c: _away_from_zero(c, 12289, 3001), "floor"),
             dist="normal"),
    ]


def cost(input, other, rounding_mode=None, out=None):
    if isinstance(other, torch.Tensor):
        n = torch.broadcast_shapes(input.shape, other.shape).numel()
        read = input.numel() * input.element_size() + other.numel() * other.element_size()
    else:
        n = input.numel()
        read = input.numel() * input.element_size()
    dtype = torch.result_type(input, other)
    if rounding_mode is None and not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    return {"flops": (1 if rounding_mode is None else 4) * n, "bytes": read + n * dtype.itemsize}
