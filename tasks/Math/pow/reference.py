import torch

from kbx_worker.casegen import Case


def pow(input_tensor, exponent, out=None):
    return torch.pow(input_tensor, exponent, out=out)


_BASES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, float("inf"), float("-inf"), float("nan")]
_EXPONENTS = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -0.5, 1.5, -2.5, float("inf"), float("-inf"),
              float("nan")]


def _outer_specials(c):
    """Every pair of special base and special exponent, as a (12, 1) and a (1, 14) tensor."""
    base = torch.tensor(_BASES, device=c.device).reshape(-1, 1)
    exponent = torch.tensor(_EXPONENTS, device=c.device).reshape(1, -1)
    return (base, exponent), {}


def _scalar_exp(make, exponent):
    return lambda c: ((make(c), exponent), {})


def _positive(c, *shape, dtype=torch.float32):
    return (c.randn(*shape).abs() + 1e-3).to(dtype)


def _tensor_exp(c, *shape):
    return (c.uniform(*shape, low=0.1, high=10), c.uniform(*shape, low=-3, high=3)), {}


def _negative_base_int_exp(c, *shape):
    """Bases of both signs with integer-valued float exponents (a real result for negative bases)."""
    return (c.uniform(*shape, low=-4, high=4), c.randint(-5, 6, *shape).to(torch.float32)), {}


def _with_out(c):
    x = _positive(c, 257, 33)
    return (x, 1.7), {"out": c.randn(x.shape)}


def cases():
    return [
        Case("special_outer_f32", "edge", _outer_specials),
        Case("special_f32_sq", "edge", _scalar_exp(lambda c: c.special(torch.float32), 2.0)),
        Case("special_f32_cube_int", "edge", _scalar_exp(lambda c: c.special(torch.float32), 3)),
        Case("special_f32_sqrt", "edge", _scalar_exp(lambda c: c.special(torch.float32, inf=False), 0.5)),
        Case("special_f32_general", "edge", _scalar_exp(lambda c: c.special(torch.float32), 2.7)),
        Case("special_f16_sq", "edge", _scalar_exp(lambda c: c.special(torch.float16), 2.0)),
        Case("special_bf16_neg", "edge", _scalar_exp(lambda c: c.special(torch.bfloat16), -1.5)),
        Case("empty_f32", "edge", _scalar_exp(lambda c: c.randn(0, 7), 2.0)),
        Case("scalar_f32", "edge", lambda c: ((c.uniform((), low=0.5, high=2), c.uniform((), low=-2, high=2)),
                                              {})),
        Case("out_f32", "edge", _with_out, dist="normal"),
        Case("sq_f32", "small", _scalar_exp(lambda c: _positive(c, 1000, 37), 2.0), dist="normal"),
        Case("rsqrt_f32", "small", _scalar_exp(lambda c: _positive(c, 3, 5, 1021), -0.5), dist="normal"),
        Case("general_f32", "small", _scalar_exp(lambda c: c.uniform(7919, low=0, high=20), 2.3),
             dist="uniform"),
        Case("tensor_exp_f32", "small", lambda c: _tensor_exp(c, 61, 129), dist="uniform"),
        Case("negative_base_int_exp_f32", "small", lambda c: _negative_base_int_exp(c, 4099), dist="uniform"),
        Case("broadcast_exp_f32", "small",
             lambda c: ((c.uniform(257, 31, low=0.1, high=4), c.uniform(31, low=-4, high=4)), {}),
             dist="uniform"),
        Case("outliers_f32_cube", "small", _scalar_exp(lambda c: c.outliers(5003, scale=30.0), 3),
             dist="outliers"),
        Case("sq_f16", "small", _scalar_exp(lambda c: c.randn(4097, std=8.0, dtype=torch.float16), 2.0),
             dist="normal"),
        Case("general_bf16", "small",
             _scalar_exp(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs(), 0.75), dist="outliers"),
        Case("perf_f32_64M_general", "full", _scalar_exp(lambda c: c.uniform(8192, 8192, low=0, high=4), 2.3),
             dist="uniform"),
        Case("perf_f32_16M_tensor_exp", "full", lambda c: _tensor_exp(c, 4096, 4096), dist="uniform"),
        Case("perf_bf16_64M_sq", "full", _scalar_exp(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16), 2.0),
             dist="normal"),
        Case("perf_f16_odd_general", "full",
             _scalar_exp(lambda c: c.uniform(12289, 3001, low=0, high=4, dtype=torch.float16), 1.7),
             dist="uniform"),
    ]


def cost(input_tensor, exponent, out=None):
    if isinstance(exponent, torch.Tensor):
        n = torch.broadcast_shapes(input_tensor.shape, exponent.shape).numel()
        read = input_tensor.numel() * input_tensor.element_size() + exponent.numel() * exponent.element_size()
        return {"flops": 20 * n, "bytes": read + n * input_tensor.element_size()}
    n = input_tensor.numel()
    flops = n if exponent in (2, 2.0) else 20 * n
    return {"flops": flops, "bytes": 2 * n * input_tensor.element_size()}
