import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_elu_linear(input, weight, bias=None, alpha=1.0, inplace=False):
    return F.elu(F.linear(input, weight, bias), alpha=alpha, inplace=inplace)


def _make(draw, x_shape, out_features, bias=True, **kwargs):
    def make(c):
        x = draw(c, x_shape)
        k = x_shape[-1]
        w = (draw(c, (out_features, k)).float() / max(k, 1) ** 0.5).to(x.dtype)
        b = c.randn(out_features, dtype=x.dtype) if bias else None
        return (x, w, b), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-2.0, high=1.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("vector_input", "edge", _make(n, (13,), 6)),
        Case("zero_features", "edge", _make(n, (4, 0), 5, alpha=0.5)),
        Case("empty_batch", "edge", _make(n, (0, 8), 5)),
        Case("alpha_zero_no_bias", "edge", _make(n, (9, 11), 7, bias=False, alpha=0.0)),
        Case("normal_f32", "small", _make(n, (64, 128), 96), dist="normal"),
        Case("normal_f16_alpha_half", "small", _make(_normal(f16), (64, 128), 256, alpha=0.5),
             dist="normal"),
        Case("normal_bf16_3d_inplace", "small",
             _make(_normal(bf16), (4, 17, 64), 33, inplace=True), dist="normal"),
        Case("uniform_f32_alpha2", "small", _make(_uniform(), (77, 100), 45, alpha=2.0),
             dist="uniform"),
        Case("uniform_bf16_no_bias", "small", _make(_uniform(bf16), (45, 100), 77, bias=False),
             dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), (50, 60), 70), dist="outliers"),
        Case("outliers_f16", "small", _make(_outliers(f16), (31, 127), 65, alpha=0.3),
             dist="outliers"),
        Case("perf_bf16_8k", "full", _make(_normal(bf16), (8192, 8192), 8192), dist="normal"),
        Case("perf_f32_4k", "full", _make(_uniform(), (4096, 4096), 4096), dist="uniform"),
        Case("perf_f16_3d", "full", _make(_normal(f16), (8, 2048, 1024), 4096, alpha=0.5),
             dist="normal"),
    ]


def cost(input, weight, bias=None, alpha=1.0, inplace=False):
    o, k = weight.shape
    rows = math.prod(input.shape[:-1])
    size = input.element_size()
    return {"flops": 2 * rows * k * o + 4 * rows * o,
            "bytes": (input.numel() + weight.numel() + rows * o + (o if bias is not None else 0))
            * size}
