import inspect

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import judge_dropout as _judge_dropout


def fused_dropout_relu_batch_norm_conv2d(input: torch.Tensor, weight: torch.Tensor,
                                         bias: torch.Tensor = None, stride: int = 1,
                                         padding: int = 0, dilation: int = 1, groups: int = 1,
                                         p: float = 0.5, training: bool = True,
                                         inplace: bool = False) -> torch.Tensor:
    conv = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    normed = F.batch_norm(conv, running_mean=None, running_var=None, weight=None, bias=None,
                          training=True)  # batch statistics: there are no running ones
    return F.dropout(F.relu(normed, inplace=inplace), p=p, training=training, inplace=inplace)


def _make(draw, x_shape, w_shape, bias=True, **kwargs):
    def make(c):
        x = draw(c, x_shape)
        w = c.randn(w_shape, dtype=x.dtype)
        b = c.randn(w_shape[0], dtype=x.dtype) if bias else None
        return (x, w, b), dict(kwargs)
    return make


def _signs(n, ch, h, w, **kwargs):
    """Random +-1 inputs through an identity 1x1 convolution: after the batch normalization every
    channel holds two values, so with half precision's wide tolerance every kept positive element
    stays informative for the dropout judge."""
    def make(c):
        x = torch.where(c.bernoulli(n, ch, h, w, p=0.5), 1.0, -1.0).to(torch.bfloat16)
        eye = torch.eye(ch, device=c.device, dtype=torch.bfloat16).reshape(ch, ch, 1, 1)
        return (x, eye, None), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.0, high=2.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    ev = {"training": False}
    return [
        Case("p0_training_keeps_all", "edge", _make(n, (2, 3, 8, 8), (6, 3, 3, 3), p=0.0)),
        Case("p1_training_drops_all", "edge", _make(n, (2, 3, 8, 8), (6, 3, 3, 3), p=1.0)),
        Case("eval_1x1_no_bias", "edge", _make(n, (3, 4, 5, 6), (5, 4, 1, 1), bias=False, **ev)),
        Case("eval_depthwise", "edge", _make(n, (1, 6, 8, 8), (6, 1, 3, 3), groups=6, **ev)),
        Case("eval_normal_f32", "small", _make(n, (2, 3, 17, 19), (8, 3, 3, 3), padding=1, **ev),
             dist="normal"),
        Case("eval_normal_bf16_stride", "small",
             _make(_normal(bf16), (2, 8, 21, 19), (12, 8, 3, 3), stride=2, padding=1, **ev),
             dist="normal"),
        Case("eval_uniform_f32_groups_dilation", "small",
             _make(_uniform(), (2, 8, 23, 23), (8, 4, 3, 3), groups=2, dilation=2, inplace=True,
                   **ev), dist="uniform"),
        Case("eval_outliers_f32", "small", _make(_outliers(), (2, 5, 16, 18), (7, 5, 3, 3), **ev),
             dist="outliers"),
        Case("train_normal_f32_p05", "small",
             _make(n, (2, 4, 20, 20), (8, 4, 3, 3), padding=1), dist="normal", random=True),
        Case("train_uniform_f32_p01_inplace", "small",
             _make(_uniform(), (3, 6, 19, 17), (10, 6, 3, 3), p=0.1, inplace=True),
             dist="uniform", random=True),
        Case("train_outliers_f32_p03", "small",
             _make(_outliers(), (2, 5, 24, 22), (9, 5, 3, 3), p=0.3, stride=1, padding=2),
             dist="outliers", random=True),
        Case("train_signs_bf16_p02", "small", _signs(4, 8, 19, 21, p=0.2), dist="signs",
             random=True),
        Case("perf_train_f16_p01", "full",
             _make(_normal(f16), (32, 64, 56, 56), (128, 64, 3, 3), padding=1, p=0.1),
             dist="normal", random=True),
        Case("perf_eval_bf16", "full",
             _make(_normal(bf16), (64, 128, 28, 28), (256, 128, 3, 3), padding=1, **ev),
             dist="normal"),
        Case("perf_train_f32_p05", "full",
             _make(n, (16, 32, 112, 112), (64, 32, 3, 3), padding=1), dist="normal",
             random=True),
        Case("perf_train_signs_bf16_p02", "full", _signs(32, 256, 56, 56, p=0.2), dist="signs",
             random=True),
    ]


def cost(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, p=0.5,
         training=True, inplace=False):
    def pair(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    n, _, h, w = input.shape
    cout, cin_g, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    outs = n * cout * ho * wo
    moved = input.numel() + weight.numel() + outs + (cout if bias is not None else 0)
    return {"flops": 2 * outs * cin_g * kh * kw + 10 * outs, "bytes": moved * input.element_size()}


def _upcast(t):
    return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_dropout_relu_batch_norm_conv2d).bind(*args, **kwargs)
    a.apply_defaults()
    kw = dict(a.arguments, training=False)
    p = kw["p"]
    y_r = fused_dropout_relu_batch_norm_conv2d(**kw)
    y_s = fused_dropout_relu_batch_norm_conv2d(**{k: _upcast(v) for k, v in kw.items()})
    keep_r = (y_r.float() * (1.0 / (1.0 - p))).to(y_r.dtype)
    keep_s = y_s / (1.0 - p)
    return _judge_dropout(out_a, out_b, keep_s, keep_r, torch.zeros_like(keep_s), p)
