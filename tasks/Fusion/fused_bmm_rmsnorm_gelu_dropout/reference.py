import inspect

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import judge_dropout as _judge_dropout


def fused_bmm_rmsnorm_gelu_dropout(input1, input2, normalized_shape, dropout_p=0.1, eps=1e-05,
                                   training=True, approximate='none', *, out=None):
    z = torch.bmm(input1, input2)
    y = F.rms_norm(z, normalized_shape=(normalized_shape,), eps=eps)
    result = F.dropout(F.gelu(y, approximate=approximate), p=dropout_p, training=training)
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
        return (x, y, k), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.0, high=1.5, dtype=dtype)


def _positive(dtype=torch.float32):
    # rows of similar values: with the wide half-precision tolerance most elements stay informative
    return lambda c, shape: c.uniform(shape, low=0.5, high=1.5, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=100.0)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    ev = {"training": False}
    return [
        Case("empty_batch", "edge", _make(_normal(), 0, 3, 4, 5, **ev)),
        Case("p0_training_keeps_all", "edge", _make(_normal(), 2, 7, 5, 9, dropout_p=0.0)),
        Case("p1_training_drops_all", "edge", _make(_normal(), 2, 7, 5, 9, dropout_p=1.0)),
        Case("row_of_one", "edge", _make(_normal(), 2, 5, 8, 1, **ev)),
        Case("zero_rows_eps", "edge", lambda c: ((torch.zeros(1, 3, 4, device=c.device),
                                                  c.randn(1, 4, 6), 6), {"training": False})),
        Case("eval_normal_f32", "small", _make(_normal(), 3, 33, 47, 29, **ev), dist="normal"),
        Case("eval_normal_f16_tanh", "small",
             _make(_normal(f16), 2, 65, 31, 17, approximate="tanh", **ev), dist="normal"),
        Case("eval_uniform_bf16_eps", "small",
             _make(_uniform(bf16), 4, 17, 64, 33, eps=1e-2, **ev), dist="uniform"),
        Case("eval_outliers_f32", "small", _make(_outliers(), 2, 40, 24, 36, **ev),
             dist="outliers"),
        Case("eval_out_f32", "small", _make(_normal(), 2, 19, 23, 21, with_out=True, **ev),
             dist="normal"),
        Case("train_normal_f32_p01", "small", _make(_normal(), 4, 64, 48, 40), dist="normal",
             random=True),
        Case("train_uniform_bf16_p05_tanh", "small",
             _make(_positive(bf16), 3, 50, 64, 41, dropout_p=0.5, approximate="tanh"),
             dist="uniform", random=True),
        Case("train_positive_f16_p02", "small", _make(_positive(f16), 2, 57, 32, 63, dropout_p=0.2),
             dist="uniform", random=True),
        Case("train_outliers_f32_p03", "small", _make(_outliers(), 2, 57, 32, 63, dropout_p=0.3),
             dist="outliers", random=True),
        Case("perf_train_bf16_p01", "full", _make(_positive(bf16), 8, 2048, 1024, 4096),
             dist="uniform", random=True),
        Case("perf_train_f16_p01", "full", _make(_normal(f16), 8, 2048, 1024, 4096),
             dist="normal", random=True),
        Case("perf_eval_f16", "full", _make(_normal(f16), 8, 4096, 512, 2048, **ev),
             dist="normal"),
        Case("perf_train_f32_p02", "full", _make(_normal(), 32, 1024, 1024, 1024, dropout_p=0.2),
             dist="normal", random=True),
        Case("perf_eval_out_bf16_tanh", "full",
             _make(_uniform(bf16), 8, 2048, 2048, 2048, with_out=True, approximate="tanh", **ev),
             dist="uniform"),
    ]


def cost(input1, input2, normalized_shape, dropout_p=0.1, eps=1e-05, training=True,
         approximate='none', *, out=None):
    b, n, m = input1.shape
    k = input2.shape[-1]
    return {"flops": 2 * b * n * m * k + 25 * b * n * k,
            "bytes": (input1.numel() + input2.numel() + b * n * k) * input1.element_size()}


def _upcast(t):
    return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_bmm_rmsnorm_gelu_dropout).bind(*args, **kwargs)
    a.apply_defaults()
    kw = dict(a.arguments, training=False, out=None)
    p = kw.pop("dropout_p")
    y_r = fused_bmm_rmsnorm_gelu_dropout(**kw)
    y_s = fused_bmm_rmsnorm_gelu_dropout(**{k: _upcast(v) for k, v in kw.items()})
    keep_r = (y_r.float() * (1.0 / (1.0 - p))).to(y_r.dtype)
    keep_s = y_s / (1.0 - p)
    return _judge_dropout(out_a, out_b, keep_s, keep_r, torch.zeros_like(keep_s), p)
