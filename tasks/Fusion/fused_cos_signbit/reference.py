from typing import Tuple

import torch

from kbx_worker.casegen import Case


def fused_cos_signbit(input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    cos_result = torch.cos(input)
    return cos_result, torch.signbit(cos_result)


def _clear_of_zeros(x):
    """Step inputs whose cosine is within 0.01 of zero to a larger representable value until it
    is not (at most a few steps; 0 as the last resort)."""
    eps = torch.finfo(x.dtype).eps
    for _ in range(8):
        near = torch.cos(x.double()).abs() < 0.01
        if not near.any():
            return x
        step = (x.double() + 0.05 + x.double().abs() * 2 * eps).to(x.dtype)
        x = torch.where(near, step, x)
    return torch.where(torch.cos(x.double()).abs() < 0.01, torch.zeros_like(x), x)


def _make(draw, *shape):
    return lambda c: ((_clear_of_zeros(draw(c, shape)),), {})


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=3.0)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-20.0, high=20.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype):
    def make(c):
        x = c.finite_special(dtype)
        keep = torch.cos(x.double()).abs() >= 0.01   # huge values whose cosine is near 0 go
        return (x[keep],), {}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _special(f32)),
        Case("special_f16", "edge", _special(f16)),
        Case("special_bf16", "edge", _special(bf16)),
        Case("multiples_of_pi", "edge",
             lambda c: ((torch.arange(-8, 9, device=c.device, dtype=torch.float32) * torch.pi,),
                        {})),
        Case("empty", "edge", _make(_normal(), 0, 3)),
        Case("scalar", "edge", _make(_normal(), )),
        Case("normal_f32", "small", _make(_normal(), 4096), dist="normal"),
        Case("normal_bf16", "small", _make(_normal(bf16), 33, 1001), dist="normal"),
        Case("uniform_f32", "small", _make(_uniform(), 7, 11, 13, 17), dist="uniform"),
        Case("uniform_f16", "small", _make(_uniform(f16), 50001), dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), 257, 255), dist="outliers"),
        Case("outliers_bf16", "small", _make(_outliers(bf16), 40000), dist="outliers"),
        Case("perf_f32_64M", "full", _make(_normal(), 8192, 8192), dist="normal"),
        Case("perf_bf16_128M", "full", _make(_uniform(bf16), 16384, 8192), dist="uniform"),
        Case("perf_f16_odd", "full", _make(_normal(f16), 12289, 3001), dist="normal"),
    ]


def cost(input):
    n = input.numel()
    return {"flops": 20 * n, "bytes": n * (2 * input.element_size() + 1)}
