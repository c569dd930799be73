import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_log_softmax_linear(input, weight, bias=None, dim=-1, dtype=None):
    output = torch.matmul(input, weight.T)
    if bias is not None:
        output += bias
    return F.log_softmax(output, dim=dim, dtype=dtype)


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(lead, k, n, in_dtype=torch.float32, dist="normal", bias=True, spread=2.0, **kwargs):
    """input (*lead, k), weight (n, k); logits have a standard deviation of about spread."""
    def make(c):
        x = _draw(c, dist, (*lead, k), in_dtype)
        w = _draw(c, "normal", (n, k), in_dtype, spread / math.sqrt(max(k, 1)))
        b = _draw(c, "normal", (n,), in_dtype) if bias else None
        return (x, w, b), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("vector_input_f32", "edge", _make((), 37, 19)),
        Case("empty_batch_f32", "edge", _make((0,), 16, 8)),
        Case("one_class_f32", "edge", _make((7,), 5, 1)),
        Case("peaked_f32", "edge", _make((9,), 64, 33, spread=40.0)),
        Case("normal_f32", "small", _make((127,), 96, 65), dist="normal"),
        Case("normal_f32_dim0", "small", _make((101,), 77, 53, dim=0), dist="normal"),
        Case("normal_f32_3d_dim1", "small", _make((3, 41), 64, 37, bias=False, dim=1),
             dist="normal"),
        Case("uniform_f16", "small", _make((100,), 128, 72, in_dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("uniform_bf16", "small", _make((97,), 33, 101, in_dtype=bf16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16_to_f32", "small",
             _make((64,), 120, 99, in_dtype=bf16, dist="outliers", dtype=f32),
             dist="outliers"),
        Case("outliers_f32", "small", _make((2, 31), 47, 129, dist="outliers"), dist="outliers"),
        Case("perf_f32_4096x2048x8192", "full", _make((4096,), 2048, 8192), dist="normal"),
        Case("perf_bf16_lm_head_to_f32", "full", _make((8192,), 4096, 32000, in_dtype=bf16, bias=False,
                   dtype=f32),
             dist="normal"),
        Case("perf_f16_16384x1024x4096", "full", _make((16384,), 1024, 4096, in_dtype=f16),
             dist="normal"),
        Case("perf_f32_odd", "full", _make((6000,), 3000, 5000, dist="uniform"), dist="uniform"),
    ]


def cost(input, weight, bias=None, dim=-1, dtype=None):
    n, k = weight.shape
    m = input.numel() // max(k, 1)
    size = input.element_size()
    out_size = torch.empty((), dtype=dtype).element_size() if dtype is not None else size
    reads = (input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)) * size
    return {"flops": 2 * m * k * n + 20 * m * n, "bytes": reads + m * n * out_size}
