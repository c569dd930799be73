import torch

from kbx_worker.casegen import Case


def sqrt_exp(input, out=None):
    if out is None:
        return torch.exp(torch.sqrt(input))
    torch.sqrt(input, out=out)
    torch.exp(out, out=out)
    return out


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("squares_f32", "edge", _plain(lambda c: torch.tensor(
            [0.25, 1.0, 4.0, 9.0, 100.0, 7800.0, 7900.0, 1e-12, 1e4], device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0, high=10))),
        Case("out_f32", "edge", _into_out(lambda c: c.uniform(257, 33, low=0, high=100)), dist="uniform"),
        Case("abs_normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=10.0).abs()), dist="normal"),
        Case("uniform_f32_wide", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=0, high=7000)),
             dist="uniform"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=0, high=100, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("outliers_f32_signed", "small", _plain(lambda c: c.outliers(7919, scale=100.0)), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=0, high=100)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=0, high=100)), dist="uniform"),
        Case("perf_bf16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=0, high=100, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd", "full",
             _plain(lambda c: c.uniform(12289, 3001, low=0, high=100, dtype=torch.float16)), dist="uniform"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 12 * n, "bytes": 2 * n * input.element_size()}
