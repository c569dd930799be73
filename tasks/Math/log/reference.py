import torch

from kbx_worker.casegen import Case


def log(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.log(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _lognormal(c, *shape, sigma=4.0, dtype=torch.float32):
    return torch.exp(c.randn(*shape, std=sigma)).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0.1, high=10))),
        Case("out_f32", "edge", _into_out(lambda c: _lognormal(c, 257, 33)), dist="lognormal"),
        Case("lognormal_f32", "small", _plain(lambda c: _lognormal(c, 1000, 37)), dist="lognormal"),
        Case("near_one_f32", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=0.9, high=1.1)),
             dist="uniform"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=1e-3, high=100, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919).abs() + 1e-3), dist="outliers"),
        Case("subnormal_f32", "small",
             _plain(lambda c: c.uniform(4099, low=1e-45, high=1.2e-38)), dist="subnormal"),
        Case("perf_f32_16M", "full", _plain(lambda c: _lognormal(c, 4096, 4096)), dist="lognormal"),
        Case("perf_f32_64M", "full", _plain(lambda c: _lognormal(c, 8192, 8192)), dist="lognormal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: _lognormal(c, 8192, 8192, dtype=torch.bfloat16)),
             dist="lognormal"),
        Case("perf_f16_odd", "full",
             _plain(lambda c: _lognormal(c, 12289, 3001, sigma=2.0, dtype=torch.float16)), dist="lognormal"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input.element_size()}
