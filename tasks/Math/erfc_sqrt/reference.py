import torch

from kbx_worker.casegen import Case


def erfc_sqrt(input: torch.Tensor):
    erfc_result = torch.erfc(input)
    sqrt_result = torch.sqrt(input)
    sqrt_result = torch.where(input < 0, torch.full_like(sqrt_result, float("nan")), sqrt_result)
    return erfc_result, sqrt_result


def _plain(make):
    return lambda c: ((make(c),), {})


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0, high=3))),
        Case("abs_normal_f32", "small", _plain(lambda c: c.randn(1000, 37).abs()), dist="normal"),
        Case("signed_normal_f32", "small", _plain(lambda c: c.randn(3, 5, 1021, std=2.0)), dist="normal"),
        Case("tail_f32", "small", _plain(lambda c: c.uniform(7919, low=4, high=10)), dist="tail"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=0, high=4, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096).abs()), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192).abs()), dist="normal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16).abs()),
             dist="normal"),
        Case("perf_f16_odd", "full", _plain(lambda c: c.randn(12289, 3001, dtype=torch.float16).abs()),
             dist="normal"),
    ]


def cost(input):
    n = input.numel()
    return {"flops": 25 * n, "bytes": 3 * n * input.element_size()}
