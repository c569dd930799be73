import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def adaptive_avg_pool2d(input, output_size):
    return F.adaptive_avg_pool2d(input, output_size)


def _one(make, output_size):
    return lambda c: ((make(c), output_size), {})


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(torch.float32).reshape(1, 1, 3, 6), (2, 3))),
        Case("special_f16_global", "edge", _one(lambda c: c.special(f16).reshape(3, 2, 3), 1)),
        Case("identity_size", "edge", _one(lambda c: c.randn(2, 3, 5, 7), (5, 7))),
        Case("upsample_larger_output", "edge", _one(lambda c: c.randn(1, 4, 3, 2), (7, 5))),
        Case("none_keeps_width", "edge", _one(lambda c: c.randn(2, 3, 10, 6), (4, None))),
        Case("chw_input", "edge", _one(lambda c: c.randn(64, 8, 9), 5)),
        Case("empty_batch", "edge", _one(lambda c: c.randn(0, 3, 8, 8), 2)),
        Case("normal_f32_7x7", "small", _one(lambda c: c.randn(2, 16, 37, 41), 7), dist="normal"),
        Case("normal_f32_5x7", "small", _one(lambda c: c.randn(1, 64, 8, 9), (5, 7)), dist="normal"),
        Case("uniform_f32_odd", "small", _one(lambda c: c.uniform(3, 5, 50, 61, low=-1, high=1), (13, 6)),
             dist="uniform"),
        Case("outliers_f32_global", "small", _one(lambda c: c.outliers(4, 32, 23, 17), 1),
             dist="outliers"),
        Case("normal_f16_3x3", "small", _one(lambda c: c.randn(2, 24, 29, 31, dtype=f16), 3),
             dist="normal"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(2, 16, 33, 35, dtype=bf16), (4, 9)),
             dist="outliers"),
        Case("perf_f32_64x128x112x112_to_7", "full", _one(lambda c: c.randn(64, 128, 112, 112), 7),
             dist="normal"),
        Case("perf_f32_32x256x56x56_to_7", "full", _one(lambda c: c.randn(32, 256, 56, 56), 7),
             dist="normal"),
        Case("perf_bf16_128x512x28x28_global", "full",
             _one(lambda c: c.randn(128, 512, 28, 28, dtype=bf16), 1), dist="normal"),
        Case("perf_f16_16x64x224x224_to_6x5", "full",
             _one(lambda c: c.uniform(16, 64, 224, 224, low=-1, high=1, dtype=f16), (6, 5)),
             dist="uniform"),
        Case("perf_f32_64x2048x7x7_global", "full", _one(lambda c: c.randn(64, 2048, 7, 7), 1),
             dist="normal"),
    ]


def cost(input, output_size):
    out = F.adaptive_avg_pool2d(torch.empty(input.shape, device="meta", dtype=input.dtype), output_size)
    es = input.element_size()
    return {"flops": input.numel() + out.numel(), "bytes": (input.numel() + out.numel()) * es}
