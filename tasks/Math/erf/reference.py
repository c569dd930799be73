import torch

from kbx_worker.casegen import Case


def erf(input_tensor):
    return torch.special.erf(input_tensor)


def _plain(make):
    return lambda c: ((make(c),), {})


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.randn(()))),
        Case("normal_f32", "small", _plain(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_3d", "small", _plain(lambda c: c.randn(3, 5, 1021, std=2.0)), dist="normal"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=-5, high=5, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16)),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919)), dist="outliers"),
        Case("tiny_f32", "small", _plain(lambda c: c.uniform(5003, low=-1e-4, high=1e-4)), dist="tiny"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16)),
             dist="normal"),
        Case("perf_f16_odd", "full", _plain(lambda c: c.randn(12289, 3001, dtype=torch.float16)),
             dist="normal"),
    ]


def cost(input_tensor):
    n = input_tensor.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input_tensor.element_size()}
