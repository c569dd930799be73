import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(input, approximate=approximate)


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), kwargs)


def cases():
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(torch.float32, inf=False))),
        Case("special_f16_tanh", "edge", _one(lambda c: c.special(torch.float16, inf=False), approximate="tanh")),
        Case("special_bf16", "edge", _one(lambda c: c.special(torch.bfloat16, inf=False))),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _one(lambda c: c.randn(()))),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_tanh", "small", _one(lambda c: c.randn(3, 5, 1021), approximate="tanh"),
             dist="normal"),
        Case("uniform_f16", "small",
             _one(lambda c: c.uniform(4097, low=-8, high=8, dtype=torch.float16)), dist="uniform"),
        Case("outliers_bf16", "small",
             _one(lambda c: c.outliers(333, 65, dtype=torch.bfloat16)), dist="outliers"),
        Case("outliers_f32_tanh", "small", _one(lambda c: c.outliers(7919), approximate="tanh"),
             dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _one(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_bf16_64M_tanh", "full",
             _one(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16), approximate="tanh"),
             dist="normal"),
        Case("perf_f16_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=torch.float16)),
             dist="normal"),
    ]


def cost(input, approximate="none"):
    n = input.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input.element_size()}
