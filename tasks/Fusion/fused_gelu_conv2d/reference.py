from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

from kbx_worker.casegen import Case


def fused_gelu_conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                      stride: Union[int, Tuple[int, int]] = 1,
                      padding: Union[int, Tuple[int, int], str] = 0,
                      dilation: Union[int, Tuple[int, int]] = 1, groups: int = 1,
                      approximate: str = 'none', out: Optional[Tensor] = None) -> Tensor:
    conv = F.conv2d(input, weight, bias=bias, stride=stride, padding=padding, dilation=dilation,
                    groups=groups)
    result = F.gelu(conv, approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _out_hw(h, w, kh, kw, stride=1, padding=0, dilation=1):
    if padding == "same":
        return h, w
    pad = (0, 0) if padding == "valid" else _pair(padding)
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    return ((h + 2 * pad[0] - dh * (kh - 1) - 1) // sh + 1,
            (w + 2 * pad[1] - dw * (kw - 1) - 1) // sw + 1)


def _make(draw, x_shape, w_shape, bias=True, with_out=False, **kwargs):
    def make(c):
        x = draw(c, x_shape)
        fan_in = w_shape[1] * w_shape[2] * w_shape[3]
        w = (draw(c, w_shape).float() / fan_in ** 0.5).to(x.dtype)
        b = c.randn(w_shape[0], dtype=x.dtype) if bias else None
        kw = dict(kwargs)
        if with_out:
            conv_kw = {k: v for k, v in kwargs.items() if k in ("stride", "padding", "dilation")}
            ho, wo = _out_hw(x_shape[2], x_shape[3], w_shape[2], w_shape[3], **conv_kw)
            kw["out"] = torch.zeros(x_shape[0], w_shape[0], ho, wo, dtype=x.dtype,
                                    device=c.device)
        return (x, w, b), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.5, high=1.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("no_bias", "edge", _make(n, (1, 3, 5, 5), (2, 3, 3, 3), bias=False)),
        Case("padding_same_tanh", "edge",
             _make(n, (2, 4, 7, 9), (3, 4, 3, 5), padding="same", approximate="tanh")),
        Case("padding_valid_1x1", "edge", _make(n, (2, 5, 4, 3), (6, 5, 1, 1), padding="valid")),
        Case("empty_batch", "edge", _make(n, (0, 3, 8, 8), (4, 3, 3, 3), padding=1)),
        Case("normal_f32", "small", _make(n, (2, 3, 17, 19), (8, 3, 3, 3), padding=1),
             dist="normal"),
        Case("normal_f32_groups_dilation_tanh", "small",
             _make(n, (2, 8, 21, 23), (6, 4, 3, 3), groups=2, dilation=2, stride=(1, 2),
                   approximate="tanh"), dist="normal"),
        Case("normal_bf16_stride2", "small",
             _make(_normal(bf16), (2, 16, 19, 17), (16, 16, 3, 3), stride=2, padding=1),
             dist="normal"),
        Case("uniform_f32_rect_kernel", "small",
             _make(_uniform(), (1, 5, 25, 22), (7, 5, 2, 4), padding=(1, 2)), dist="uniform"),
        Case("uniform_bf16_depthwise_tanh", "small",
             _make(_uniform(bf16), (3, 12, 15, 15), (12, 1, 5, 5), groups=12, padding=2,
                   approximate="tanh"), dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), (2, 6, 16, 18), (5, 6, 3, 3)),
             dist="outliers"),
        Case("out_f32", "small",
             _make(n, (2, 4, 13, 11), (6, 4, 3, 3), padding=1, with_out=True), dist="normal"),
        Case("perf_f32_resnet_3x3", "full",
             _make(n, (32, 256, 56, 56), (256, 256, 3, 3), padding=1), dist="normal"),
        Case("perf_bf16_wide_tanh", "full",
             _make(_normal(bf16), (64, 128, 112, 112), (128, 128, 3, 3), padding=1,
                   approximate="tanh"), dist="normal"),
        Case("perf_f16_deep_out", "full",
             _make(_uniform(f16), (128, 512, 14, 14), (512, 512, 3, 3), padding=1,
                   with_out=True), dist="uniform"),
        Case("perf_f32_stride2_7x7", "full",
             _make(n, (64, 3, 224, 224), (64, 3, 7, 7), stride=2, padding=3), dist="normal"),
    ]


def cost(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, approximate='none',
         out=None):
    n, _, h, w = input.shape
    cout, cin_g, kh, kw = weight.shape
    ho, wo = _out_hw(h, w, kh, kw, stride, padding, dilation)
    outs = n * cout * ho * wo
    moved = input.numel() + weight.numel() + outs + (cout if bias is not None else 0)
    return {"flops": 2 * outs * cin_g * kh * kw + 20 * outs,
            "bytes": moved * input.element_size()}
