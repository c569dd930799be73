import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return F.relu(input, inplace=inplace)


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), kwargs)


def cases():
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(F32))),
        Case("special_f16", "edge", _one(lambda c: c.special(F16))),
        Case("special_bf16_inplace", "edge", _one(lambda c: c.special(BF16), inplace=True)),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _one(lambda c: c.randn(()))),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_inplace", "small", _one(lambda c: c.randn(3, 5, 1021), inplace=True),
             dist="normal"),
        Case("uniform_f16", "small", _one(lambda c: c.uniform(4097, low=-8, high=8, dtype=F16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=BF16)), dist="outliers"),
        Case("outliers_f32_inplace", "small", _one(lambda c: c.outliers(7919), inplace=True),
             dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _one(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_bf16_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=BF16)), dist="normal"),
        Case("perf_f16_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=F16)), dist="normal"),
    ]


def cost(input, inplace=False):
    n = input.numel()
    return {"flops": n, "bytes": 2 * n * input.element_size()}
