import torch

from kbx_worker.casegen import Case


def exp_sqrt(input, out=None):
    result = torch.sqrt(torch.exp(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


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
        Case("overflow_edge_f32", "edge", _plain(lambda c: torch.tensor(
            [88.0, 88.7, 88.8, 100.0, 170.0, -87.0, -100.0, -104.0, -180.0], device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.randn(()))),
        Case("out_f32", "edge", _into_out(lambda c: c.randn(257, 33, std=3.0)), dist="normal"),
        Case("normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=3.0)), dist="normal"),
        Case("uniform_f32_wide", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=-80, high=80)),
             dist="uniform"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=-10, high=10, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16, scale=30.0)),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919, scale=100.0)), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096, std=3.0)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=3.0)), dist="normal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=3.0, dtype=torch.bfloat16)),
             dist="normal"),
        Case("perf_f16_odd", "full", _plain(lambda c: c.randn(12289, 3001, std=3.0, dtype=torch.float16)),
             dist="normal"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 12 * n, "bytes": 2 * n * input.element_size()}
