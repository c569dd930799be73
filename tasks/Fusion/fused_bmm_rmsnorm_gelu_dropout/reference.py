import inspect
import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


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


# --- statistical judge for the training=True (random) cases -------------------------------------
# Every output element must be within the tolerance of either the value it takes when its dropout
# element is kept (keep_s, float64) or the value it takes when dropped (drop_s). Where the two
# values are more than twice the tolerance apart the element is informative: the share of dropped
# informative elements must lie in a Chernoff (KL) interval around p that a correct kernel leaves
# with probability below 1e-7 per side and draw, and the two draws must drop different elements.

_RATIO, _FLOOR = 10.0, 4.0  # as in task.toml
_EPS = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7,
        torch.float64: 2.0 ** -52}
_LOG_INV_DELTA = math.log(1e7)
_MIN_INFORMATIVE = 200


def _kl(q, p):
    def term(a, b):
        if a == 0:
            return 0.0
        return math.inf if b == 0 else a * math.log(a / b)
    return term(q, p) + term(1.0 - q, 1.0 - p)


def _classify(c, keep_s, keep_r, drop_s):
    """(informative, dropped) masks of one draw, or (None, reason)."""
    if not isinstance(c, torch.Tensor) or c.shape != keep_r.shape or c.dtype != keep_r.dtype:
        return None, "output shape or dtype differs from the reference's"
    c64 = c.detach().to(device=keep_s.device, dtype=torch.float64)
    if not torch.isfinite(c64).all():
        return None, "output has non-finite values"
    eps = _EPS[keep_r.dtype]
    scale = keep_s.abs().max().item()
    ref_err = (keep_r.double() - keep_s).abs().max().item()
    tol = _RATIO * max(ref_err, _FLOOR * eps * scale)
    d_keep, d_drop = (c64 - keep_s).abs(), (c64 - drop_s).abs()
    bad = (d_keep > tol) & (d_drop > tol)
    if bad.any():
        return None, (f"{int(bad.sum())} elements are neither the kept value nor the dropped one "
                      f"(tolerance {tol:.3g})")
    norm = torch.linalg.vector_norm(keep_s).item() or 1.0
    l2 = torch.linalg.vector_norm(torch.minimum(d_keep, d_drop)).item() / norm
    l2_ref = torch.linalg.vector_norm(keep_r.double() - keep_s).item() / norm
    if l2 > _RATIO * max(l2_ref, _FLOOR * eps):
        return None, f"relative L2 error {l2:.3g} of the kept values exceeds 10x PyTorch's"
    informative = (keep_s - drop_s).abs() > 2 * tol
    return (informative, informative & (d_drop <= tol)), ""


def _judge_dropout(out_a, out_b, keep_s, keep_r, drop_s, p):
    stats, dropped = {}, []
    for tag, c in (("a", out_a), ("b", out_b)):
        res, why = _classify(c, keep_s, keep_r, drop_s)
        if res is None:
            return {"ok": False, "message": f"draw {tag}: {why}", "stats": stats}
        informative, drop = res
        n, k = int(informative.sum()), int(drop.sum())
        stats[f"informative_{tag}"] = float(n)
        stats[f"drop_rate_{tag}"] = k / n if n else float("nan")
        if n < _MIN_INFORMATIVE:
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: only {n} informative elements (case too small)"}
        if n * _kl(k / n, p) > _LOG_INV_DELTA:
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: drop rate {k / n:.4f} of {n} elements is not "
                               f"binomial around p={p}"}
        dropped.append(drop)
    if torch.equal(dropped[0], dropped[1]):
        return {"ok": False, "stats": stats, "message": "the two draws dropped the same elements"}
    return {"ok": True, "message": "", "stats": stats}
