import torch

from kbx_worker.casegen import Case


def avg_pool1d(input, kernel_size, stride=None, padding=0):
    return torch.nn.functional.avg_pool1d(input, kernel_size, stride=stride, padding=padding)


def _one(make, *args, **kwargs):
    return lambda c: ((make(c),) + args, kwargs)


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("special_f32_k2", "edge", _one(lambda c: c.special(torch.float32).reshape(1, 1, 18), 2)),
        Case("special_bf16_k3_s1_p1", "edge",
             _one(lambda c: c.special(bf16).reshape(1, 18), 3, stride=1, padding=1)),
        Case("kernel1", "edge", _one(lambda c: c.randn(2, 3, 9), 1)),
        Case("global_window", "edge", _one(lambda c: c.randn(2, 3, 25), 25)),
        Case("stride_gt_kernel", "edge", _one(lambda c: c.randn(2, 3, 30), 2, 5)),
        Case("padding_edges", "edge", _one(lambda c: c.randn(1, 2, 7), 4, 3, 2)),
        Case("cl_input", "edge", _one(lambda c: c.randn(4, 16), 2)),
        Case("empty_batch", "edge", _one(lambda c: c.randn(0, 4, 16), 2)),
        Case("normal_f32_k2", "small", _one(lambda c: c.randn(2, 4, 16), kernel_size=2), dist="normal"),
        Case("normal_f32_k4_s2", "small", _one(lambda c: c.randn(2, 4, 32), kernel_size=4, stride=2),
             dist="normal"),
        Case("normal_f32_k3_s1_p1", "small",
             _one(lambda c: c.randn(2, 4, 16), kernel_size=3, stride=1, padding=1), dist="normal"),
        Case("uniform_f32_k5_s3_p2", "small", _one(lambda c: c.uniform(8, 33, 201, low=-1, high=1), 5, 3, 2),
             dist="uniform"),
        Case("outliers_f32_k7_s2", "small", _one(lambda c: c.outliers(5, 17, 517), 7, 2), dist="outliers"),
        Case("normal_f16_k3_s1_p1", "small",
             _one(lambda c: c.randn(3, 40, 301, dtype=f16), 3, 1, 1), dist="normal"),
        Case("outliers_bf16_k4", "small", _one(lambda c: c.outliers(2, 64, 403, dtype=bf16), 4),
             dist="outliers"),
        Case("perf_f32_64x256x16384_k3_s1_p1", "full",
             _one(lambda c: c.randn(64, 256, 16384), 3, 1, 1), dist="normal"),
        Case("perf_bf16_32x512x8192_k4", "full", _one(lambda c: c.randn(32, 512, 8192, dtype=bf16), 4),
             dist="normal"),
        Case("perf_f32_128x128x4001_k2", "full", _one(lambda c: c.uniform(128, 128, 4001, low=-1, high=1), 2),
             dist="uniform"),
        Case("perf_f16_16x768x16000_k7_s1_p3", "full",
             _one(lambda c: c.randn(16, 768, 16000, dtype=f16), 7, 1, 3), dist="normal"),
    ]


def cost(input, kernel_size, stride=None, padding=0):
    s = kernel_size if stride is None else stride
    lout = (input.shape[-1] + 2 * padding - kernel_size) // s + 1
    rows = input.numel() // max(input.shape[-1], 1)
    n_out = rows * lout
    return {"flops": n_out * kernel_size, "bytes": (input.numel() + n_out) * input.element_size()}
