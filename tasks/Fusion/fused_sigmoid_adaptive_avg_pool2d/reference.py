from typing import Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

from kbx_worker.casegen import Case


def fused_sigmoid_adaptive_avg_pool2d(input: Tensor, output_size: Union[int, Tuple[int, int]]) -> Tensor:
    return torch.sigmoid(F.adaptive_avg_pool2d(input, output_size))


def _draw(c, dist, shape, dtype):
    if dist == "uniform":
        t = c.uniform(*shape, low=-3.0, high=3.0)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return t.to(dtype)


def _make(shape, output_size, dtype=torch.float32, dist="normal"):
    return lambda c: ((_draw(c, dist, shape, dtype), output_size), {})


def _special(dtype, inf=True):
    def make(c):
        s = c.special(dtype, inf=inf)
        s = torch.cat([s, s.flip(0)])
        return (s.reshape(1, 2, 3, -1), (2, 3)), {}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _special(f32)),
        Case("special_f16", "edge", _special(f16)),
        Case("special_bf16", "edge", _special(bf16)),
        Case("global_pool_f32", "edge", _make((2, 3, 7, 5), 1)),
        Case("upsample_f32", "edge", _make((2, 3, 3, 4), (7, 9))),
        Case("empty_batch_f32", "edge", _make((0, 3, 8, 8), 4)),
        Case("normal_f32_divisible", "small", _make((2, 16, 32, 24), (8, 6)), dist="normal"),
        Case("normal_f32_overlapping", "small", _make((3, 8, 23, 19), (5, 7)), dist="normal"),
        Case("uniform_f32_3d", "small", _make((12, 31, 29), 6), dist="uniform"),
        Case("uniform_f16", "small", _make((2, 8, 33, 35), (4, 9), dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16", "small", _make((4, 6, 27, 21), (3, 3), dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32", "small", _make((1, 5, 64, 63), (10, 1), dist="outliers"),
             dist="outliers"),
        Case("perf_f32_56_to_7", "full", _make((64, 256, 56, 56), 7), dist="normal"),
        Case("perf_bf16_squeeze_excite", "full", _make((128, 512, 28, 28), 1, dtype=bf16),
             dist="normal"),
        Case("perf_f16_112_to_14", "full", _make((32, 128, 112, 112), (14, 14), dtype=f16),
             dist="normal"),
        Case("perf_f32_odd_overlap", "full", _make((32, 192, 75, 75), (9, 11), dist="uniform"),
             dist="uniform"),
    ]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def cost(input, output_size):
    oh, ow = _pair(output_size)
    lead = input.numel() // max(1, input.shape[-1] * input.shape[-2])
    out = lead * oh * ow
    size = input.element_size()
    return {"flops": input.numel() + 5 * out, "bytes": (input.numel() + out) * size}
