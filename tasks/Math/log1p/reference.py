import torch

from kbx_worker.casegen import Case


def log1p(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.log1p(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _small(c, *shape, dtype=torch.float32):
    """Signed values with magnitudes spread log-uniformly over 1e-12 .. 1e-3."""
    mag = torch.pow(10.0, c.uniform(*shape, low=-12, high=-3))
    sign = torch.where(c.bernoulli(*shape), 1.0, -1.0)
    return (sign * mag).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=-0.5, high=2))),
        Case("out_f32", "edge", _into_out(lambda c: c.uniform(257, 33, low=-0.9, high=10)), dist="uniform"),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(1000, 37, low=-0.99, high=10)), dist="uniform"),
        Case("small_f32", "small", _plain(lambda c: _small(c, 3, 5, 1021)), dist="small"),
        Case("small_f16", "small", _plain(lambda c: _small(c, 4097, dtype=torch.float16)), dist="small"),
        Case("normal_bf16", "small",
             _plain(lambda c: c.randn(333, 65, dtype=torch.bfloat16).clamp(min=-0.95)), dist="normal"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919).abs()), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=-0.5, high=4)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=-0.5, high=4)), dist="uniform"),
        Case("perf_bf16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=-0.5, high=4, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd", "full", _plain(lambda c: _small(c, 12289, 3001, dtype=torch.float16)), dist="small"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input.element_size()}
