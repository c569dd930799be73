import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return F.leaky_relu(input, negative_slope=negative_slope, inplace=inplace)


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), kwargs)


def cases():
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(F32))),
        Case("special_f16_slope02", "edge", _one(lambda c: c.special(F16), negative_slope=0.2)),
        Case("special_bf16", "edge", _one(lambda c: c.special(BF16))),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _one(lambda c: c.randn(()))),
        Case("slope0_f32", "edge", _one(lambda c: c.randn(257), negative_slope=0.0)),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_inplace", "small", _one(lambda c: c.randn(3, 5, 1021), inplace=True),
             dist="normal"),
        Case("uniform_f16_slope", "small",
             _one(lambda c: c.uniform(4097, low=-8, high=8, dtype=F16), negative_slope=0.1), dist="uniform"),
        Case("normal_bf16_inplace", "small",
             _one(lambda c: c.randn(61, 131, dtype=BF16), negative_slope=0.3, inplace=True), dist="normal"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=BF16)), dist="outliers"),
        Case("outliers_f32_steep", "small", _one(lambda c: c.outliers(7919), negative_slope=1.5),
             dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _one(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_bf16_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=BF16), negative_slope=0.2),
             dist="normal"),
        Case("perf_f16_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=F16)), dist="normal"),
    ]


def cost(input, negative_slope=0.01, inplace=False):
    n = input.numel()
    return {"flops": 2 * n, "bytes": 2 * n * input.element_size()}
