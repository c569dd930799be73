import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_layer_norm_relu_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None,
                                 normalized_shape: torch.Size = None, eps: float = 1e-05,
                                 elementwise_affine: bool = True) -> torch.Tensor:
    linear_output = F.linear(input, weight, bias)
    relu_output = F.relu(linear_output)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return F.layer_norm(relu_output, normalized_shape, eps=eps)


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(lead, k, n, dtype=torch.float32, dist="normal", bias=True, bias_mean=0.0, norm="int",
          **kwargs):
    """input (*lead, k), weight (n, k); norm: 'int' (n), 'tuple' ((n,)) or 'two' (last two dims)."""
    def make(c):
        x = _draw(c, dist, (*lead, k), dtype)
        w = _draw(c, "normal", (n, k), dtype, 1.0 / math.sqrt(max(k, 1)))
        b = (_draw(c, "normal", (n,), torch.float32, 0.5) + bias_mean).to(dtype) if bias else None
        if norm == "int":
            shape = n
        elif norm == "tuple":
            shape = (n,)
        else:
            shape = (lead[-1], n)
        return (x, w, b, shape), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("vector_input_f32", "edge", _make((), 37, 19)),
        Case("empty_batch_f32", "edge", _make((0,), 16, 8)),
        Case("mostly_dead_f32", "edge", _make((65,), 48, 64, bias_mean=-2.0)),
        Case("all_dead_rows_f32", "edge", _make((9,), 32, 40, bias_mean=-50.0)),
        Case("single_feature_f32", "edge", _make((7,), 5, 1)),
        Case("normal_f32", "small", _make((127,), 96, 65), dist="normal"),
        Case("normal_f32_two_dims", "small", _make((3, 41), 77, 53, norm="two", eps=1e-3),
             dist="normal"),
        Case("uniform_f16", "small", _make((100,), 128, 72, dtype=f16, dist="uniform", norm="tuple"),
             dist="uniform"),
        Case("uniform_f32_no_bias", "small", _make((1, 97), 33, 101, dist="uniform", bias=False),
             dist="uniform"),
        Case("outliers_bf16", "small", _make((64,), 120, 99, dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32", "small", _make((2, 31), 47, 29, dist="outliers", eps=1e-2),
             dist="outliers"),
        Case("perf_f32_8192x4096x4096", "full", _make((8192,), 4096, 4096), dist="normal"),
        Case("perf_bf16_4x2048x4096x4096", "full", _make((4, 2048), 4096, 4096, dtype=bf16),
             dist="normal"),
        Case("perf_f16_wide", "full", _make((16384,), 1024, 8192, dtype=f16, norm="tuple"),
             dist="normal"),
        Case("perf_f32_odd", "full", _make((6000,), 3000, 5000, dist="uniform"), dist="uniform"),
    ]


def cost(input, weight, bias=None, normalized_shape=None, eps=1e-05, elementwise_affine=True):
    n, k = weight.shape
    m = input.numel() // max(k, 1)
    size = input.element_size()
    reads = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)
    return {"flops": 2 * m * k * n + 10 * m * n, "bytes": (reads + m * n) * size}
