import inspect

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import judge_dropout as _judge_dropout


def fused_bmm_dropout_gelu(input1, input2, p=0.5, training=True, inplace=False, approximate='none',
                           *, out=None):
    z = torch.bmm(input1, input2)
    d = F.dropout(z, p=p, training=training, inplace=inplace)
    result = F.gelu(d, approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, b, n, m, k, with_out=False, **kwargs):
    def make(c):
        x, y = draw(c, (b, n, m)), draw(c, (b, m, k))
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros(b, n, k, dtype=x.dtype, device=c.device)
        return (x, y), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.0, high=1.5, dtype=dtype)


def _positive(dtype=torch.float32):
    # products of similar size: with bfloat16's wide tolerance most elements stay informative
    return lambda c, shape: c.uniform(shape, low=0.5, high=1.5, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=100.0)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    ev = {"training": False}
    return [
        Case("empty_batch", "edge", _make(_normal(), 0, 3, 4, 5, **ev)),
        Case("p0_training_keeps_all", "edge", _make(_normal(), 2, 7, 5, 9, p=0.0)),
        Case("p1_training_drops_all", "edge", _make(_normal(), 2, 7, 5, 9, p=1.0)),
        Case("inner_dim_1", "edge", _make(_normal(), 3, 5, 1, 6, **ev)),
        Case("eval_normal_f32", "small", _make(_normal(), 3, 33, 47, 29, **ev), dist="normal"),
        Case("eval_normal_f16_inplace", "small",
             _make(_normal(f16), 2, 65, 31, 17, inplace=True, **ev), dist="normal"),
        Case("eval_uniform_bf16_tanh", "small",
             _make(_uniform(bf16), 4, 17, 64, 33, approximate="tanh", **ev), dist="uniform"),
        Case("eval_outliers_f32", "small", _make(_outliers(), 2, 40, 24, 36, **ev),
             dist="outliers"),
        Case("eval_out_f32", "small", _make(_normal(), 2, 19, 23, 21, with_out=True, **ev),
             dist="normal"),
        Case("train_normal_f32_p05", "small", _make(_normal(), 4, 64, 48, 40), dist="normal",
             random=True),
        Case("train_uniform_bf16_p01_tanh", "small",
             _make(_positive(bf16), 3, 50, 64, 41, p=0.1, approximate="tanh"), dist="uniform",
             random=True),
        Case("train_normal_f16_p02_inplace", "small",
             _make(_normal(f16), 2, 57, 32, 63, p=0.2, inplace=True), dist="normal", random=True),
        Case("train_outliers_f32_p03", "small", _make(_outliers(), 2, 57, 32, 63, p=0.3),
             dist="outliers", random=True),
        Case("perf_train_f16_p01", "full", _make(_normal(f16), 32, 1024, 1024, 1024, p=0.1),
             dist="normal", random=True),
        Case("perf_eval_bf16", "full", _make(_normal(bf16), 16, 2048, 512, 2048, **ev),
             dist="normal"),
        Case("perf_train_f32_p05_tanh", "full",
             _make(_normal(), 8, 1024, 1024, 1024, approximate="tanh"), dist="normal",
             random=True),
        Case("perf_eval_out_bf16", "full", _make(_uniform(bf16), 8, 2048, 2048, 1024,
                                                  with_out=True, **ev), dist="uniform"),
    ]


def cost(input1, input2, p=0.5, training=True, inplace=False, approximate='none', *, out=None):
    b, n, m = input1.shape
    k = input2.shape[-1]
    size = input1.element_size()
    return {"flops": 2 * b * n * m * k + 20 * b * n * k,
            "bytes": (input1.numel() + input2.numel() + b * n * k) * size}


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_bmm_dropout_gelu).bind(*args, **kwargs)
    a.apply_defaults()
    x, y, p, approx = a.arguments["input1"], a.arguments["input2"], a.arguments["p"], \
        a.arguments["approximate"]
    keep_s = F.gelu(torch.bmm(x.double(), y.double()) / (1.0 - p), approximate=approx)
    z = torch.bmm(x, y)
    keep_r = F.gelu((z.float() * (1.0 / (1.0 - p))).to(z.dtype), approximate=approx)
    return _judge_dropout(out_a, out_b, keep_s, keep_r, torch.zeros_like(keep_s), p)
