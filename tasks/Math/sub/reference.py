import torch

from kbx_worker.casegen import Case


def sub(input: torch.Tensor, other: torch.Tensor, *, alpha: float = 1, out: torch.Tensor = None) -> torch.Tensor:
    return torch.sub(input, other, alpha=alpha, out=out)


def _outer(c, dtype, alpha=1, inf=True):
    """Every special value minus alpha times every special value, as (n, 1) and (1, n) tensors."""
    s = c.special(dtype, inf=inf)
    return (s.reshape(-1, 1), s.reshape(1, -1)), {"alpha": alpha}


def _pair(make_a, make_b, alpha=None):
    kw = {} if alpha is None else {"alpha": alpha}
    return lambda c: ((make_a(c), make_b(c)), dict(kw))


def _with_out(c):
    return (c.randn(257, 33), c.randn(257, 33)), {"alpha": 0.75, "out": c.randn(257, 33)}


def cases():
    return [
        Case("special_outer_f32", "edge", lambda c: _outer(c, torch.float32)),
        Case("special_outer_f32_alpha", "edge", lambda c: _outer(c, torch.float32, alpha=2.5, inf=False)),
        Case("special_outer_f16", "edge", lambda c: _outer(c, torch.float16)),
        Case("special_outer_bf16", "edge", lambda c: _outer(c, torch.bfloat16, alpha=-1)),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 7), lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _pair(lambda c: c.randn(()), lambda c: c.randn(()), alpha=2)),
        Case("out_f32", "edge", _with_out, dist="normal"),
        Case("normal_f32", "small", _pair(lambda c: c.randn(1000, 37), lambda c: c.randn(1000, 37)),
             dist="normal"),
        Case("normal_f32_alpha", "small",
             _pair(lambda c: c.randn(3, 5, 1021), lambda c: c.randn(3, 5, 1021), alpha=-0.3), dist="normal"),
        Case("broadcast_row_f32", "small", _pair(lambda c: c.randn(257, 61), lambda c: c.randn(61), alpha=2.0),
             dist="normal"),
        Case("python_scalar_f32", "small", _pair(lambda c: c.uniform(7919, low=-10, high=10), lambda c: 2.0),
             dist="uniform"),
        Case("outliers_f32", "small", _pair(lambda c: c.outliers(4099), lambda c: c.outliers(4099)),
             dist="outliers"),
        Case("uniform_f16_alpha", "small",
             _pair(lambda c: c.uniform(4097, low=-100, high=100, dtype=torch.float16),
                   lambda c: c.uniform(4097, low=-10, high=10, dtype=torch.float16), alpha=3.7), dist="uniform"),
        Case("outliers_bf16", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=torch.bfloat16),
                   lambda c: c.outliers(333, 65, dtype=torch.bfloat16)), dist="outliers"),
        Case("int32_alpha", "small",
             _pair(lambda c: c.randint(-10**6, 10**6, 61, 67, dtype=torch.int32),
                   lambda c: c.randint(-10**6, 10**6, 61, 67, dtype=torch.int32), alpha=3), dist="uniform"),
        Case("perf_f32_64M", "full", _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192, 8192)),
             dist="normal"),
        Case("perf_f32_64M_alpha_row", "full",
             _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192), alpha=0.5), dist="normal"),
        Case("perf_bf16_64M", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16),
                   lambda c: c.randn(8192, 8192, dtype=torch.bfloat16)), dist="normal"),
        Case("perf_f16_odd_alpha", "full",
             _pair(lambda c: c.randn(12289, 3001, dtype=torch.float16),
                   lambda c: c.randn(12289, 3001, dtype=torch.float16), alpha=2.0), dist="normal"),
    ]


def cost(input, other, *, alpha=1, out=None):
    if isinstance(other, torch.Tensor):
        n = torch.broadcast_shapes(input.shape, other.shape).numel()
        read = input.numel() * input.element_size() + other.numel() * other.element_size()
    else:
        n = input.numel()
        read = input.numel() * input.element_size()
    dtype = torch.result_type(input, other)
    return {"flops": (1 if alpha == 1 else 2) * n, "bytes": read + n * dtype.itemsize}
