import inspect

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import judge_dropout as _judge_dropout


def fused_hardshrink_dropout(input: torch.Tensor, p: float = 0.5, training: bool = True,
                             inplace: bool = False, lambd: float = 0.5) -> torch.Tensor:
    if training:
        input = F.dropout(input, p=p, training=training, inplace=inplace)
    return F.hardshrink(input, lambd)


def _clear_of_threshold(x, p, lambd):
    """Move elements whose magnitude, before or after the 1/(1-p) scaling, lies within 1% of lambd
    by 3% of lambd away from it (rounding would otherwise decide between 0 and +-lambd)."""
    if lambd <= 0:
        return x
    x64 = x.double()
    edges = [lambd] + ([lambd * (1.0 - p)] if 0.0 < p < 1.0 else [])
    for edge in edges:
        near = (x64.abs() - edge).abs() < 0.01 * edge
        step = torch.where(x64.abs() > edge, 0.03, -0.03) * edge * torch.sign(x64)
        x64 = torch.where(near, x64 + step, x64)
    return x64.to(x.dtype)


def _make(draw, shape, **kwargs):
    def make(c):
        x = draw(c, shape)
        x = _clear_of_threshold(x, kwargs.get("p", 0.5), kwargs.get("lambd", 0.5))
        return (x,), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-3.0, high=3.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype):
    return lambda c: ((c.special(dtype),), {"training": False})


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    ev = {"training": False}
    return [
        Case("special_f32", "edge", _special(f32)),
        Case("special_bf16", "edge", _special(bf16)),
        Case("p1_training_drops_all", "edge", _make(n, (7, 9), p=1.0)),
        Case("p0_training_inplace", "edge", _make(n, (7, 9), p=0.0, inplace=True)),
        Case("lambd_zero_eval", "edge", _make(n, (5, 6), lambd=0.0, **ev)),
        Case("empty", "edge", _make(n, (0, 4), **ev)),
        Case("eval_normal_f32", "small", _make(n, (256, 255), **ev), dist="normal"),
        Case("eval_normal_f16_inplace", "small",
             _make(_normal(f16), (33, 1001), lambd=0.7, inplace=True, **ev), dist="normal"),
        Case("eval_uniform_bf16", "small", _make(_uniform(bf16), (4097, 3), lambd=1.25, **ev),
             dist="uniform"),
        Case("eval_outliers_f32", "small", _make(_outliers(), (300, 200), **ev),
             dist="outliers"),
        Case("train_normal_f32_p05", "small", _make(n, (200, 300)), dist="normal", random=True),
        Case("train_uniform_bf16_p01", "small", _make(_uniform(bf16), (250, 240), p=0.1),
             dist="uniform", random=True),
        Case("train_normal_f16_p03_lambd", "small",
             _make(_normal(f16), (129, 257), p=0.3, lambd=0.3), dist="normal", random=True),
        Case("train_outliers_f32_p02", "small", _make(_outliers(), (301, 199), p=0.2),
             dist="outliers", random=True),
        Case("perf_train_bf16_p01", "full", _make(_uniform(bf16), (8192, 8192), p=0.1),
             dist="uniform", random=True),
        Case("perf_eval_f32_64M", "full", _make(n, (8192, 8192), **ev), dist="normal"),
        Case("perf_train_f32_p05", "full", _make(n, (8192, 8192)), dist="normal", random=True),
        Case("perf_train_f16_odd", "full", _make(_normal(f16), (12289, 3001), p=0.2, lambd=0.25),
             dist="normal", random=True),
    ]


def cost(input, p=0.5, training=True, inplace=False, lambd=0.5):
    n = input.numel()
    return {"flops": 3 * n, "bytes": 2 * n * input.element_size()}


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_hardshrink_dropout).bind(*args, **kwargs)
    a.apply_defaults()
    x, p, lambd = a.arguments["input"], a.arguments["p"], a.arguments["lambd"]
    keep_s = F.hardshrink(x.double() / (1.0 - p), lambd)
    keep_r = F.hardshrink((x.float() * (1.0 / (1.0 - p))).to(x.dtype), lambd)
    return _judge_dropout(out_a, out_b, keep_s, keep_r, torch.zeros_like(keep_s), p)
