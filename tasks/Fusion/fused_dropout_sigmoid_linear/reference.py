import inspect
import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import judge_dropout as _judge_dropout


def fused_dropout_sigmoid_linear(input: torch.Tensor, weight: torch.Tensor, bias=None, p=0.5,
                                 training=True, inplace=False) -> torch.Tensor:
    output = torch.sigmoid(F.linear(input, weight, bias))
    if training:
        output = F.dropout(output, p=p, training=training, inplace=inplace)
    return output


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
    return lambda c, shape: c.uniform(shape, low=-1.5, high=1.5, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=30.0)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    ev = {"training": False}
    return [
        Case("p0_training_keeps_all", "edge", _make(n, (5, 7), 9, p=0.0)),
        Case("p1_training_drops_all", "edge", _make(n, (5, 7), 9, p=1.0)),
        Case("eval_vector_no_bias", "edge", _make(n, (13,), 6, bias=False, **ev)),
        Case("eval_zero_features", "edge", _make(n, (4, 0), 5, **ev)),
        Case("eval_empty_batch", "edge", _make(n, (0, 8), 5, **ev)),
        Case("eval_normal_f32", "small", _make(n, (64, 128), 96, **ev), dist="normal"),
        Case("eval_normal_f16_3d", "small", _make(_normal(f16), (4, 17, 64), 33, **ev),
             dist="normal"),
        Case("eval_uniform_bf16_no_bias", "small",
             _make(_uniform(bf16), (45, 100), 77, bias=False, **ev), dist="uniform"),
        Case("eval_outliers_f32", "small", _make(_outliers(), (50, 60), 70, **ev),
             dist="outliers"),
        Case("train_normal_f32_p05", "small", _make(n, (64, 128), 100), dist="normal",
             random=True),
        Case("train_uniform_bf16_p01_3d", "small", _make(_uniform(bf16), (3, 50, 64), 41, p=0.1),
             dist="uniform", random=True),
        Case("train_normal_f16_p03_inplace", "small",
             _make(_normal(f16), (100, 48), 63, p=0.3, inplace=True), dist="normal", random=True),
        Case("train_outliers_f32_p02", "small", _make(_outliers(), (70, 90), 80, p=0.2),
             dist="outliers", random=True),
        Case("perf_train_bf16_p01", "full", _make(_normal(bf16), (8192, 4096), 4096, p=0.1),
             dist="normal", random=True),
        Case("perf_eval_f16_3d", "full", _make(_normal(f16), (8, 2048, 1024), 4096, **ev),
             dist="normal"),
        Case("perf_train_f32_p05", "full", _make(_uniform(), (4096, 4096), 4096), dist="uniform",
             random=True),
        Case("perf_eval_bf16", "full", _make(_uniform(bf16), (16384, 2048), 8192, **ev),
             dist="uniform"),
    ]


def cost(input, weight, bias=None, p=0.5, training=True, inplace=False):
    o, k = weight.shape
    rows = math.prod(input.shape[:-1])
    size = input.element_size()
    return {"flops": 2 * rows * k * o + 6 * rows * o,
            "bytes": (input.numel() + weight.numel() + rows * o + (o if bias is not None else 0))
            * size}


def _upcast(t):
    return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_dropout_sigmoid_linear).bind(*args, **kwargs)
    a.apply_defaults()
    kw = dict(a.arguments, training=False)
    p = kw["p"]
    y_r = fused_dropout_sigmoid_linear(**kw)
    y_s = fused_dropout_sigmoid_linear(**{k: _upcast(v) for k, v in kw.items()})
    keep_r = (y_r.float() * (1.0 / (1.0 - p))).to(y_r.dtype)
    keep_s = y_s / (1.0 - p)
    return _judge_dropout(out_a, out_b, keep_s, keep_r, torch.zeros_like(keep_s), p)
