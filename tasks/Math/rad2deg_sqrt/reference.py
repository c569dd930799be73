import torch

from kbx_worker.casegen import Case


def rad2deg_sqrt(input: torch.Tensor):
    return torch.rad2deg(input), torch.sqrt(input)


def _plain(make):
    return lambda c: ((make(c),), {})


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("angles_f32", "edge", _plain(lambda c: torch.tensor(
            [3.14159265, 1.57079633, 0.78539816, 0.0, 6.28318531, 1e-20, 100.0], device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0, high=6.3))),
        Case("abs_normal_f32", "small", _plain(lambda c: c.randn(1000, 37).abs()), dist="normal"),
        Case("signed_uniform_f32", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=-7, high=7)),
             dist="uniform"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=0, high=6.3, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919).abs() + 1e-3), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=0, high=6.3)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=0, high=6.3)), dist="uniform"),
        Case("perf_bf16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=0, high=6.3, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd", "full",
             _plain(lambda c: c.uniform(12289, 3001, low=0, high=6.3, dtype=torch.float16)), dist="uniform"),
    ]


def cost(input):
    n = input.numel()
    return {"flops": 2 * n, "bytes": 3 * n * input.element_size()}
