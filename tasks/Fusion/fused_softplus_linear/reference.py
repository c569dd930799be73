import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_softplus_linear(input, weight, bias=None, beta=1, threshold=20):
    linear_out = F.linear(input, weight, bias)
    softplus_out = 1 / beta * torch.log(1 + torch.exp(beta * linear_out))
    return torch.where(linear_out > threshold, linear_out, softplus_out)


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(lead, k, n, dtype=torch.float32, dist="normal", bias=True, spread=3.0, **kwargs):
    """input (*lead, k), weight (n, k); pre-activations have a standard deviation of about spread."""
    def make(c):
        x = _draw(c, dist, (*lead, k), dtype)
        w = _draw(c, "normal", (n, k), dtype, spread / math.sqrt(max(k, 1)))
        b = _draw(c, "normal", (n,), dtype) if bias else None
        return (x, w, b), dict(kwargs)
    return make


def _identity_threshold(rows, k, threshold, beta):
    """weight = I and no bias, so z = input exactly; no z lies within 0.01 of the threshold, where
    the function jumps by log(1 + exp(-beta * threshold)) / beta."""
    def make(c):
        x = c.uniform(rows, k, low=threshold - 8.0, high=threshold + 8.0)
        near = (x - threshold).abs() < 0.01
        x = torch.where(near, x + 0.03, x)
        w = torch.eye(k, device=c.device)
        return (x, w, None), {"beta": beta, "threshold": threshold}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("vector_input_f32", "edge", _make((), 37, 19)),
        Case("empty_batch_f32", "edge", _make((0,), 16, 8)),
        Case("around_threshold_f32", "edge", _identity_threshold(33, 64, 5, 1)),
        Case("wide_range_f32", "edge", _make((17,), 64, 29, spread=40.0, beta=2)),
        Case("normal_f32", "small", _make((127,), 96, 65), dist="normal"),
        Case("normal_f32_3d_beta", "small", _make((3, 41), 77, 53, beta=0.5, threshold=10),
             dist="normal"),
        Case("uniform_f16", "small", _make((100,), 128, 72, dtype=f16, dist="uniform", spread=2.0),
             dist="uniform"),
        Case("uniform_f32_no_bias", "small", _make((1, 97), 33, 101, dist="uniform", bias=False,
                                                   beta=2, threshold=15), dist="uniform"),
        Case("outliers_bf16", "small", _make((64,), 120, 99, dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32", "small", _make((2, 31), 47, 29, dist="outliers", beta=1.5),
             dist="outliers"),
        Case("perf_f32_8192x4096x4096", "full", _make((8192,), 4096, 4096), dist="normal"),
        Case("perf_bf16_mlp", "full", _make((4, 2048), 4096, 11008, dtype=bf16), dist="normal"),
        Case("perf_f16_beta", "full",
             _make((16384,), 1024, 4096, dtype=f16, spread=2.0, beta=0.5, threshold=10),
             dist="normal"),
        Case("perf_f32_odd", "full", _make((6000,), 3000, 5000, dist="uniform"), dist="uniform"),
    ]


def cost(input, weight, bias=None, beta=1, threshold=20):
    n, k = weight.shape
    m = input.numel() // max(k, 1)
    size = input.element_size()
    reads = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)
    return {"flops": 2 * m * k * n + 30 * m * n, "bytes": (reads + m * n) * size}
