import inspect
import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import dropout_mask_verdict


def fused_mul_add_logsoftmax_dropout_bmm(input1, input2, other, mat2, p=0.5, training=True,
                                         inplace=False, dim=-1, *, out=None):
    Z = torch.mul(input1, input2)
    S = torch.add(Z, other)
    L = F.log_softmax(S, dim=dim)
    D = F.dropout(L, p=p, training=training, inplace=inplace)
    Y = torch.bmm(D, mat2)
    if out is not None:
        out.copy_(Y)
        return out
    return Y


# ---- cases ---------------------------------------------------------------------------------------

def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=10.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(b, m, k, n, dtype=torch.float32, dist="normal", other="full", with_out=False, **kwargs):
    """input1, input2 (b, m, k); other (b, m, k), (k,) when 'row', or a number; mat2 (b, k, n)."""
    def make(c):
        x1 = _draw(c, dist, (b, m, k), dtype)
        x2 = _draw(c, dist, (b, m, k), dtype)
        if other == "full":
            o = _draw(c, "normal", (b, m, k), dtype)
        elif other == "row":
            o = _draw(c, "normal", (k,), dtype)
        else:
            o = other
        m2 = _draw(c, "normal", (b, k, n), dtype)
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.full((b, m, n), -5.0, dtype=dtype, device=c.device)
        return (x1, x2, o, m2), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("eval_single_f32", "edge", _make(1, 1, 5, 3, training=False)),
        Case("drop_all_f32", "edge", _make(2, 3, 4, 5, p=1.0)),
        Case("keep_all_p0_f32_out", "edge", _make(2, 7, 9, 6, p=0.0, with_out=True)),
        Case("eval_scalar_other_dim1_f32", "edge", _make(3, 5, 4, 2, other=0.5, training=False,
                                                        dim=1)),
        Case("eval_normal_f32", "small", _make(4, 37, 48, 33, training=False), dist="normal"),
        Case("eval_uniform_f16_out", "small",
             _make(3, 64, 40, 24, dtype=f16, dist="uniform", training=False, with_out=True),
             dist="uniform"),
        Case("eval_outliers_bf16_dim1", "small",
             _make(2, 50, 31, 40, dtype=bf16, dist="outliers", other="row", training=False, dim=1),
             dist="outliers"),
        Case("p0_outliers_f32", "small", _make(5, 20, 33, 17, dist="outliers", p=0.0),
             dist="outliers"),
        Case("drop_normal_f32", "small", _make(4, 128, 24, 56), dist="normal", random=True),
        Case("drop_uniform_f32_p02_dim1", "small",
             _make(3, 96, 32, 72, dist="uniform", p=0.2, dim=1, inplace=True), dist="uniform",
             random=True),
        Case("drop_outliers_f32_p07_row_other", "small",
             _make(2, 200, 20, 48, dist="outliers", other="row", p=0.7), dist="outliers",
             random=True),
        Case("drop_normal_f16_p03", "small", _make(4, 128, 24, 56, dtype=f16, p=0.3),
             dist="normal", random=True),
        Case("perf_eval_f32_attention", "full", _make(32, 2048, 2048, 128, training=False),
             dist="normal"),
        Case("perf_eval_bf16_attention", "full",
             _make(64, 1024, 1024, 64, dtype=bf16, training=False), dist="normal"),
        Case("perf_p0_f16_out", "full",
             _make(16, 4096, 1024, 128, dtype=f16, p=0.0, with_out=True), dist="normal"),
        Case("perf_drop_f32_wide", "full", _make(16, 2048, 128, 256, p=0.1), dist="normal",
             random=True),
    ]


def cost(input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1, *, out=None):
    b, k, n = mat2.shape
    m = input1.shape[-2]
    size = mat2.element_size()
    elems = b * m * k
    reads = sum(t.numel() for t in (input1, input2, other, mat2) if isinstance(t, torch.Tensor))
    return {"flops": 2 * b * m * k * n + 10 * elems, "bytes": (reads + b * m * n) * size}


# ---- statistical contract for the random cases ---------------------------------------------------

_MAX_ROWS = 4096            # rows of D reconstructed per draw (the judge runs on a CPU)

def judge(args, kwargs, out_a, out_b):
    """The dropout mask sits before the bmm, so it is not visible in the output directly. Every
    random case has mat2 of shape (B, K, N) with N >= 2K and independent entries (full row rank,
    well conditioned), so D = Y mat2^+ recovers the dropout output exactly up to rounding; the judge
    reconstructs D for up to _MAX_ROWS rows (evenly spaced) and applies the dropout rules to it."""
    bound = inspect.signature(fused_mul_add_logsoftmax_dropout_bmm).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    x1, x2, other, mat2 = a["input1"], a["input2"], a["other"], a["mat2"]
    p, dim = float(a["p"]), a["dim"]
    b, k, n = mat2.shape
    m = x1.shape[-2]
    if n < k:
        return {"ok": False, "stats": {}, "message": "case not judgeable: mat2 has fewer columns "
                                                     "than rows"}
    for tag, y in (("a", out_a), ("b", out_b)):
        if not isinstance(y, torch.Tensor) or tuple(y.shape) != (b, m, n) or y.dtype != mat2.dtype:
            return {"ok": False, "stats": {},
                    "message": f"draw {tag}: expected a tensor of shape {(b, m, n)} and dtype "
                               f"{mat2.dtype}"}
        if not torch.isfinite(y).all():
            return {"ok": False, "stats": {}, "message": f"draw {tag}: non-finite values"}
    dbl = lambda t: t.double().cpu() if isinstance(t, torch.Tensor) else t
    L = F.log_softmax(dbl(x1) * dbl(x2) + dbl(other), dim=dim)
    rows = torch.linspace(0, m - 1, min(m, max(1, _MAX_ROWS // b))).round().long().unique()
    lhs = dbl(mat2).transpose(-1, -2)  # (b, n, k)

    def recover(y):
        rhs = dbl(y)[:, rows, :].transpose(-1, -2)  # (b, n, rows)
        return torch.linalg.lstsq(lhs, rhs).solution.transpose(-1, -2)  # (b, rows, k)

    half = mat2.dtype in (torch.float16, torch.bfloat16)
    return dropout_mask_verdict(recover(out_a), recover(out_b), L[:, rows, :] / (1.0 - p), p,
                                tau=0.05 if half else 1e-3, mean_tol=0.01 if half else 1e-4,
                                exact_zero=False, what="log_softmax")
