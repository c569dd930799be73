import inspect
import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import dropout_mask_verdict


def fused_mv_logsoftmax_dropout(input, vec, p=0.5, training=True, inplace=False, dim=0, *, out=None):
    z = torch.mv(input, vec)
    s = F.log_softmax(z, dim=dim)
    y = F.dropout(s, p=p, training=training, inplace=inplace)
    if out is not None:
        out.copy_(y)
        return out
    return y


# ---- cases ---------------------------------------------------------------------------------------

def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(n, m, dtype=torch.float32, dist="normal", spread=1.0, with_out=False, **kwargs):
    """input (n, m), vec (m) scaled so that z = input @ vec has a standard deviation of about
    spread (log-softmax values then lie near -log(n), well away from 0)."""
    def make(c):
        a = _draw(c, dist, (n, m), dtype)
        v = _draw(c, "normal", (m,), dtype, spread / math.sqrt(max(m, 1)))
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.full((n,), -5.0, dtype=dtype, device=c.device)
        return (a, v), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("eval_one_row_f32", "edge", _make(1, 7, training=False)),
        Case("drop_all_f32", "edge", _make(33, 17, p=1.0)),
        Case("keep_all_p0_f32_out", "edge", _make(65, 40, p=0.0, with_out=True)),
        Case("eval_peaked_f32", "edge", _make(50, 30, spread=30.0, training=False, dim=-1)),
        Case("eval_normal_f32", "small", _make(1000, 37, training=False), dist="normal"),
        Case("eval_uniform_f16_out", "small",
             _make(257, 128, dtype=f16, dist="uniform", training=False, with_out=True),
             dist="uniform"),
        Case("eval_outliers_bf16", "small", _make(511, 64, dtype=bf16, dist="outliers",
                                                  training=False, p=0.3), dist="outliers"),
        Case("p0_outliers_f32", "small", _make(129, 255, dist="outliers", p=0.0), dist="outliers"),
        Case("drop_normal_f32", "small", _make(8000, 8), dist="normal", random=True),
        Case("drop_uniform_f32_p02_inplace", "small",
             _make(6000, 10, dist="uniform", p=0.2, inplace=True), dist="uniform", random=True),
        Case("drop_outliers_f32_p08", "small", _make(7001, 9, dist="outliers", p=0.8),
             dist="outliers", random=True),
        Case("drop_normal_bf16_p03", "small", _make(6000, 10, dtype=bf16, p=0.3), dist="normal",
             random=True),
        Case("perf_eval_f32_16384x16384", "full", _make(16384, 16384, training=False),
             dist="normal"),
        Case("perf_eval_bf16_32768x8192", "full", _make(32768, 8192, dtype=bf16, training=False),
             dist="normal"),
        Case("perf_p0_f16_odd_out", "full",
             _make(12289, 6001, dtype=f16, dist="uniform", p=0.0, with_out=True), dist="uniform"),
        Case("perf_drop_f32_8192x8192", "full", _make(8192, 8192), dist="normal", random=True),
        Case("perf_drop_bf16_65536x4096_p01", "full", _make(65536, 4096, dtype=bf16, p=0.1),
             dist="normal", random=True),
    ]


def cost(input, vec, p=0.5, training=True, inplace=False, dim=0, *, out=None):
    n, m = input.shape
    size = input.element_size()
    return {"flops": 2 * n * m + 8 * n, "bytes": (n * m + m + n) * size}


# ---- statistical contract for the random cases ---------------------------------------------------

def judge(args, kwargs, out_a, out_b):
    bound = inspect.signature(fused_mv_logsoftmax_dropout).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    inp, vec, p, dim = a["input"], a["vec"], float(a["p"]), a["dim"]
    for tag, y in (("a", out_a), ("b", out_b)):
        if not isinstance(y, torch.Tensor) or y.shape != (inp.shape[0],) or y.dtype != inp.dtype:
            return {"ok": False, "stats": {},
                    "message": f"draw {tag}: expected a tensor of shape {(inp.shape[0],)} and dtype "
                               f"{inp.dtype}"}
    expected = F.log_softmax(torch.mv(inp.double().cpu(), vec.double().cpu()), dim=dim) / (1.0 - p)
    half = inp.dtype in (torch.float16, torch.bfloat16)
    return dropout_mask_verdict(out_a.double().cpu(), out_b.double().cpu(), expected, p,
                                tau=0.05 if half else 1e-3, mean_tol=0.01 if half else 1e-4,
                                exact_zero=True, what="log_softmax")
