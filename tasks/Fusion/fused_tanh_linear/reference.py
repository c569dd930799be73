import math

import torch

from kbx_worker.casegen import Case


def fused_tanh_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None) -> torch.Tensor:
    output = torch.matmul(input, weight.t())
    if bias is not None:
        output += bias
    return torch.tanh(output)


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(lead, k, n, dtype=torch.float32, dist="normal", bias=True, wscale=None):
    """input (*lead, k), weight (n, k) scaled so that the pre-activations are about unit size."""
    def make(c):
        ws = wscale if wscale is not None else 1.0 / math.sqrt(max(k, 1))
        x = _draw(c, dist, (*lead, k), dtype)
        w = _draw(c, "normal", (n, k), dtype, ws)
        b = _draw(c, "normal", (n,), dtype, 0.5) if bias else None
        return (x, w, b), {}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("vector_input_f32", "edge", _make((), 37, 19)),
        Case("empty_batch_f32", "edge", _make((0,), 16, 8)),
        Case("k1_no_bias_f32", "edge", _make((5,), 1, 7, bias=False, wscale=1.0)),
        Case("saturating_f32", "edge", _make((9,), 64, 33, wscale=2.0)),
        Case("normal_f32", "small", _make((127,), 96, 65), dist="normal"),
        Case("normal_f32_3d_no_bias", "small", _make((3, 41), 77, 53, bias=False), dist="normal"),
        Case("uniform_f16", "small", _make((100,), 128, 72, dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("uniform_f32_odd", "small", _make((1, 97), 33, 101, dist="uniform"), dist="uniform"),
        Case("outliers_bf16", "small", _make((64,), 120, 99, dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32", "small", _make((2, 31), 47, 29, dist="outliers"), dist="outliers"),
        Case("perf_f32_8192x4096x4096", "full", _make((8192,), 4096, 4096), dist="normal"),
        Case("perf_bf16_mlp_up", "full", _make((4, 2048), 4096, 11008, dtype=bf16), dist="normal"),
        Case("perf_f16_no_bias", "full", _make((16384,), 1024, 4096, dtype=f16, bias=False),
             dist="normal"),
        Case("perf_f32_odd", "full", _make((6000,), 3000, 5000, dist="uniform"), dist="uniform"),
    ]


def cost(input, weight, bias=None):
    n, k = weight.shape
    m = input.numel() // max(k, 1)
    size = input.element_size()
    reads = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)
    return {"flops": 2 * m * k * n + 25 * m * n, "bytes": (reads + m * n) * size}
