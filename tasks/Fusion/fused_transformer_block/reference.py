import inspect
import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case
from kbx_worker.contracts import dropout_mask_verdict


def fused_transformer_block(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    z1 = input @ weight1
    z2 = F.softmax(z1, dim=-1)
    z3 = F.dropout(z2, p=dropout_p, training=True)
    z4 = z3 @ weight2
    y = F.layer_norm(z4 + residual, normalized_shape=(z4.size(-1),), eps=eps)
    if out is not None:
        out.copy_(y)
        return out
    return y


# ---- cases ---------------------------------------------------------------------------------------

def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=10.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(lead, d_in, d_k, d_out, dtype=torch.float32, dist="normal", residual="full", spread=1.0,
          with_out=False, **kwargs):
    """input (*lead, d_in); weight1 (d_in, d_k) scaled so that the logits have a standard deviation
    of about spread; weight2 (d_k, d_out) scaled by sqrt(d_k) so that z4 is of unit size;
    residual (*lead, d_out) when 'full', (lead[-1], d_out) when 'rows', (d_out,) when 'vector'."""
    def make(c):
        x = _draw(c, dist, (*lead, d_in), dtype)
        w1 = _draw(c, "normal", (d_in, d_k), dtype, spread / math.sqrt(max(d_in, 1)))
        w2 = _draw(c, "normal", (d_k, d_out), dtype, math.sqrt(d_k))
        shape = {"full": (*lead, d_out), "rows": (lead[-1], d_out), "vector": (d_out,)}[residual]
        r = _draw(c, "normal", shape, dtype, 0.5)
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.full((*lead, d_out), -5.0, dtype=dtype, device=c.device)
        return (x, w1, w2, r), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("p0_single_token_f32", "edge", _make((1, 1), 8, 5, 6, dropout_p=0.0)),
        Case("drop_all_gives_layer_norm_of_residual_f32", "edge",
             _make((2, 3), 4, 5, 7, dropout_p=1.0)),
        Case("p0_peaked_softmax_f32", "edge", _make((3, 5), 16, 12, 10, spread=30.0, dropout_p=0.0)),
        Case("p0_vector_residual_out_f32", "edge",
             _make((2, 9), 12, 7, 11, residual="vector", dropout_p=0.0, with_out=True, eps=1e-3)),
        Case("p0_normal_f32", "small", _make((4, 33), 48, 64, 40, dropout_p=0.0), dist="normal"),
        Case("p0_uniform_f16_rows_residual", "small",
             _make((2, 50), 64, 96, 64, dtype=f16, dist="uniform", residual="rows", dropout_p=0.0),
             dist="uniform"),
        Case("p0_outliers_bf16_out", "small",
             _make((3, 31), 40, 72, 56, dtype=bf16, dist="outliers", dropout_p=0.0, with_out=True),
             dist="outliers"),
        Case("p0_normal_f32_2d_input", "small", _make((97,), 33, 47, 29, dropout_p=0.0, eps=1e-2),
             dist="normal"),
        Case("drop_normal_f32", "small", _make((4, 128), 16, 24, 96, spread=0.5), dist="normal",
             random=True),
        Case("drop_uniform_f32_p03_vector_residual", "small",
             _make((2, 200), 12, 20, 80, dist="uniform", residual="vector", spread=0.5,
                   dropout_p=0.3), dist="uniform", random=True),
        Case("drop_outliers_f32_p05", "small",
             _make((300,), 16, 24, 96, dist="outliers", residual="rows", spread=0.5, dropout_p=0.5),
             dist="outliers", random=True),
        Case("drop_normal_f16_p02", "small",
             _make((4, 128), 16, 24, 96, dtype=f16, spread=0.5, dropout_p=0.2), dist="normal",
             random=True),
        Case("drop_uniform_bf16_p04", "small",
             _make((3, 100), 20, 16, 64, dtype=bf16, dist="uniform", spread=0.5, dropout_p=0.4),
             dist="uniform", random=True),
        Case("perf_p0_f32_2048x1024x4096", "full",
             _make((4, 2048), 1024, 4096, 1024, dropout_p=0.0), dist="normal"),
        Case("perf_p0_bf16_4096x2048x8192", "full",
             _make((2, 4096), 2048, 8192, 2048, dtype=bf16, dropout_p=0.0), dist="normal"),
        Case("perf_p0_f16_8192x4096_out", "full",
             _make((1, 8192), 4096, 4096, 4096, dtype=f16, dropout_p=0.0, with_out=True),
             dist="normal"),
        Case("perf_drop_bf16_2048x4096x1024", "full",
             _make((2, 2048), 4096, 1024, 4096, dtype=bf16, spread=0.5, dropout_p=0.1),
             dist="normal", random=True),
    ]


def cost(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    d_in, d_k = weight1.shape
    d_out = weight2.shape[1]
    rows = input.numel() // max(d_in, 1)
    size = input.element_size()
    flops = (2 * rows * d_in * d_k + 2 * rows * d_k * d_out  # the two matmuls
             + 6 * rows * d_k                                # softmax and dropout
             + 9 * rows * d_out)                             # residual add and layer norm
    reads = input.numel() + weight1.numel() + weight2.numel() + residual.numel()
    return {"flops": flops, "bytes": (reads + rows * d_out) * size}


# ---- statistical contract for the random cases ---------------------------------------------------

_WORK = 1 << 21             # rows whose mask is reconstructed: max(256, _WORK / (d_out * d_k))

def judge(args, kwargs, out_a, out_b):
    """The mask sits between the softmax and the second matmul, and a layer norm follows, so it is
    reconstructed: for an output row y, LayerNorm gives s*y = C(z3 @ W2 + r) with C the centering
    map and s > 0 the row's unknown standard deviation. With M = C W2^T (d_out x d_k) of full
    column rank (every random case has d_out >= 2 d_k and independent weights), z3 = M^+ (s y - C r),
    and s is the unique value that puts s y - C r in the range of M. The recovered z3 must be 0 or
    softmax(x W1) / (1 - p) entry by entry, for a budget of evenly spaced rows; the fit residual
    and the layer-norm statistics of every row are checked too. Random cases use flat softmaxes
    (logit spread 0.5) and d_out = 4 d_k so that the recovery is far more accurate than the
    tolerances, also from bfloat16 outputs."""
    bound = inspect.signature(fused_transformer_block).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    x, w1, w2, res = a["input"], a["weight1"], a["weight2"], a["residual"]
    p = float(a["dropout_p"])
    d_in, d_k = w1.shape
    d_out = w2.shape[1]
    shape = (*x.shape[:-1], d_out)
    if d_out < 2 * d_k:
        return {"ok": False, "stats": {}, "message": "case not judgeable: d_out < 2 d_k"}
    half = x.dtype in (torch.float16, torch.bfloat16)
    tol_ln = 5e-2 if half else 1e-3
    stats = {}
    ys = []
    for tag, y in (("a", out_a), ("b", out_b)):
        if not isinstance(y, torch.Tensor) or tuple(y.shape) != shape or y.dtype != x.dtype:
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: expected a tensor of shape {shape} and dtype {x.dtype}"}
        y = y.double().cpu().reshape(-1, d_out)
        if not torch.isfinite(y).all():
            return {"ok": False, "stats": stats, "message": f"draw {tag}: non-finite values"}
        mean_dev = float(y.mean(dim=1).abs().max())
        var_dev = float((y.var(dim=1, unbiased=False) - 1.0).abs().max())
        stats[f"ln_mean_dev_{tag}"], stats[f"ln_var_dev_{tag}"] = mean_dev, var_dev
        if mean_dev > tol_ln or var_dev > tol_ln:
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: rows are not layer-normalized (largest |mean| "
                               f"{mean_dev:.3g}, largest |var - 1| {var_dev:.3g})"}
        ys.append(y)
    total = ys[0].shape[0]
    budget = max(256, _WORK // (d_out * d_k))  # the judge runs on a CPU
    rows = torch.linspace(0, total - 1, min(total, budget)).round().long().unique()
    xs = x.double().cpu().reshape(-1, d_in)[rows]
    soft = F.softmax(xs @ w1.double().cpu(), dim=-1)
    r = torch.broadcast_to(res.double().cpu(), shape).reshape(-1, d_out)[rows]
    cr = r - r.mean(dim=1, keepdim=True)
    w2t = w2.double().cpu().T
    mat = w2t - w2t.mean(dim=0, keepdim=True)  # C W2^T
    q, rfac = torch.linalg.qr(mat)  # reduced: q (d_out, d_k), rfac (d_k, d_k)
    cr_q = cr @ q
    beta = torch.linalg.solve_triangular(rfac, cr_q.T, upper=True).T  # M^+ C r, per row
    pcr = cr - cr_q @ q.T                                             # part of C r outside range(M)
    recovered = []
    for tag, y in zip("ab", ys):
        yr = y[rows]
        y_q = yr @ q
        alpha = torch.linalg.solve_triangular(rfac, y_q.T, upper=True).T  # M^+ y, per row
        py = yr - y_q @ q.T
        s = (py * pcr).sum(dim=1) / (py * py).sum(dim=1)
        resid = (s[:, None] * py - pcr).norm(dim=1) / cr.norm(dim=1)
        stats[f"fit_residual_{tag}"] = float(resid.max())
        if not bool((s > 0).all()) or float(resid.max()) > (0.1 if half else 1e-3):
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: the output is not layer_norm(z @ weight2 + residual) "
                               f"for any z (relative misfit {float(resid.max()):.3g})"}
        recovered.append(s[:, None] * alpha - beta)
    return dropout_mask_verdict(recovered[0], recovered[1], soft / (1.0 - p), p,
                                tau=0.1 if half else 1e-3, atol_frac=1.0 if half else 0.25,
                                mean_tol=0.01 if half else 1e-4, stats=stats,
                                exact_zero=False, what="softmax")
