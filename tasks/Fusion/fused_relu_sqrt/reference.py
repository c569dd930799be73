import torch
from torch import Tensor

from kbx_worker.casegen import Case


def fused_relu_sqrt(input: Tensor, inplace: bool = False, out: Tensor = None) -> Tensor:
    if input.dtype != torch.float32 and input.dtype != torch.float64:
        input = input.float()
    if inplace:
        input.relu_()
        input.sqrt_()
        return input
    if out is not None:
        out.copy_(torch.sqrt(torch.relu(input)))
        return out
    return torch.sqrt(torch.relu(input))


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), dict(kwargs))


def _with_out(make_input, **kwargs):
    def make(c):
        x = make_input(c)
        kw = dict(kwargs)
        kw["out"] = torch.full(x.shape, -5.0, dtype=torch.float32, device=c.device)
        return (x,), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(f32))),
        Case("special_f16", "edge", _one(lambda c: c.special(f16))),
        Case("special_bf16_out", "edge", _with_out(lambda c: c.special(bf16))),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 7))),
        Case("int64", "edge", _one(lambda c: c.randint(-10, 1000, 129, 33)), dist="integers"),
        Case("int32_inplace", "edge",
             _one(lambda c: c.randint(-50, 50, 2049, dtype=torch.int32), inplace=True),
             dist="integers"),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_inplace", "small", _one(lambda c: c.randn(3, 5, 1021), inplace=True),
             dist="normal"),
        Case("uniform_f16", "small", _one(lambda c: c.uniform(4097, low=-8, high=100, dtype=f16)),
             dist="uniform"),
        Case("uniform_bf16_inplace", "small",
             _one(lambda c: c.uniform(255, 77, low=-3, high=3, dtype=bf16), inplace=True),
             dist="uniform"),
        Case("outliers_f32_out", "small", _with_out(lambda c: c.outliers(333, 65)), dist="outliers"),
        Case("outliers_f16", "small", _one(lambda c: c.outliers(7919, dtype=f16, scale=100.0)),
             dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M_inplace", "full", _one(lambda c: c.randn(8192, 8192), inplace=True),
             dist="normal"),
        Case("perf_f32_64M_out", "full", _with_out(lambda c: c.uniform(8192, 8192, low=-1, high=9)),
             dist="uniform"),
        Case("perf_bf16_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=bf16)), dist="normal"),
    ]


def cost(input, inplace=False, out=None):
    n = input.numel()
    return {"flops": 2 * n, "bytes": n * input.element_size() + 4 * n}
