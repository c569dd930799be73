import torch

from kbx_worker.casegen import Case


def rsqrt(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.rsqrt(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _log_uniform(c, *shape, lo=-30, hi=30, dtype=torch.float32):
    return torch.pow(10.0, c.uniform(*shape, low=lo, high=hi)).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0.5, high=4))),
        Case("out_f32", "edge", _into_out(lambda c: c.randn(257, 33).abs() + 1e-3), dist="normal"),
        Case("abs_normal_f32", "small", _plain(lambda c: c.randn(1000, 37).abs() + 1e-3), dist="normal"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=1e-3, high=1000, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(3, 5, 1021).abs() + 1e-3), dist="outliers"),
        Case("log_uniform_f32", "small", _plain(lambda c: _log_uniform(c, 7919)), dist="log_uniform"),
        Case("subnormal_f32", "small", _plain(lambda c: c.uniform(4099, low=1e-45, high=1.2e-38)),
             dist="subnormal"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=1e-3, high=10)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=1e-3, high=10)), dist="uniform"),
        Case("perf_bf16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=1e-3, high=10, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd", "full",
             _plain(lambda c: c.uniform(12289, 3001, low=1e-3, high=10, dtype=torch.float16)), dist="uniform"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 2 * n, "bytes": 2 * n * input.element_size()}
