"""Statistical contracts shared by task references (kbx_worker.casegen's sibling).

judge_dropout: the dropout judge of the Fusion tasks whose random cases drop elements.
"""

import math

import torch

# The judge of training=True (random) dropout cases.
# Every output element must be within the tolerance of either the value it takes when its dropout
# element is kept (keep_s, float64) or the value it takes when dropped (drop_s). Where the two
# values are more than twice the tolerance apart the element is informative: the share of dropped
# informative elements must lie in a Chernoff (KL) interval around p that a correct kernel leaves
# with probability below 1e-7 per side and draw, and the two draws must drop different elements.

_RATIO, _FLOOR = 10.0, 4.0  # the tasks' contract.ratio and contract.ulp_floor
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


def judge_dropout(out_a, out_b, keep_s, keep_r, drop_s, p):
    """Judge two draws of a dropout output: every element near its kept (keep_s) or dropped
    (drop_s) value, a binomial drop rate around p on informative elements, different masks."""
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


# Mask checks for dropout that sits before further computation (the judge recovers the dropout
# output, or the no-dropout value it must be 0 or 1/(1-p) times, and checks the mask).

LOG_BOUND = math.log(2e9)  # a two-sided test at this bound fails a correct kernel w.p. < 1e-9


def binomial_ok(k, n, q):
    """Chernoff: for X ~ Bin(n, q), P(|X/n - q| >= |k/n - q|) <= 2 exp(-n KL(k/n || q))."""
    f = k / n

    def term(a, b):
        return 0.0 if a == 0 else a * math.log(a / b)
    kl = term(f, q) + term(1.0 - f, 1.0 - q)
    return n * kl < LOG_BOUND


def classify_dropout(y, v, tau, atol, exact_zero):
    """Per element: 0 dropped, 1 kept (within tau*|v| + atol of v), 2 ambiguous (v too close to
    zero to tell), -1 neither; and the worst distance / tolerance. A dropped element is exactly
    zero (exact_zero) or, for recovered values, within the tolerance of zero."""
    tol = tau * v.abs() + atol
    cls = torch.full(v.shape, -1, dtype=torch.int8)
    if exact_zero:
        kept = (y - v).abs() <= tol
        cls[y == 0] = 0
        cls[kept] = 1
        cls[v.abs() <= 2 * tol] = 2
        fit = float(((y - v).abs() / tol)[cls == 1].max()) if bool((cls == 1).any()) else 0.0
        return cls, fit
    cls[y.abs() <= tol] = 0
    cls[(y - v).abs() <= tol] = 1
    cls[v.abs() <= 2 * tol] = 2
    dist = torch.minimum(y.abs(), (y - v).abs()) / tol
    fit = float(dist[cls <= 1].max()) if bool((cls <= 1).any()) else 0.0
    return cls, fit


def dropout_mask_verdict(ya, yb, v, p, tau, mean_tol, atol_frac=0.25, stats=None,
                         exact_zero=True, what="the no-dropout value"):
    """Judge two draws ya, yb of a dropout result against v (the no-dropout value over 1-p):
    every element 0 or v, a binomial zero rate around p, kept elements averaging v, and two
    masks that agree as often as independent ones do."""
    stats = {} if stats is None else stats
    classes = []
    for tag, y in (("a", ya), ("b", yb)):
        cls, fit = classify_dropout(y, v, tau, tau * float(v.abs().mean()) * atol_frac, exact_zero)
        stats[f"fit_{tag}"] = fit
        bad = int((cls < 0).sum())
        if bad:
            i = tuple(int(j) for j in (cls < 0).nonzero()[0])
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: {bad} elements are neither 0 nor {what} / (1 - p) "
                               f"(first at {i}: got {float(y[i]):.6g}, expected 0 or "
                               f"{float(v[i]):.6g})"}
        dropped, kept = int((cls == 0).sum()), int((cls == 1).sum())
        n = dropped + kept
        if n < 500:
            return {"ok": False, "stats": stats, "message": f"draw {tag}: only {n} decidable elements"}
        ratio = float((y[cls == 1] / v[cls == 1]).mean()) if kept else float("nan")
        stats[f"zero_rate_{tag}"] = dropped / n
        stats[f"kept_ratio_{tag}"] = ratio
        stats["decided"] = n
        if not binomial_ok(dropped, n, p):
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: zero rate {dropped / n:.4f} over {n} elements is "
                               f"outside the binomial bound around p = {p}"}
        if kept and abs(ratio - 1.0) > mean_tol:
            return {"ok": False, "stats": stats,
                    "message": f"draw {tag}: kept elements average {ratio:.5f} times the expected "
                               f"value (scale by 1/(1-p))"}
        classes.append(cls)
    both = (classes[0] != 2) & (classes[1] != 2)
    n = int(both.sum())
    agree = int((classes[0][both] == classes[1][both]).sum())
    stats["mask_agreement"] = agree / n
    if agree == n:
        return {"ok": False, "stats": stats, "message": "the two draws have the same mask"}
    if not binomial_ok(agree, n, p * p + (1 - p) * (1 - p)):
        return {"ok": False, "stats": stats,
                "message": f"the two draws agree on {agree / n:.4f} of the positions; independent "
                           f"masks agree on p^2 + (1-p)^2 = {p * p + (1 - p) ** 2:.4f}"}
    return {"ok": True, "stats": stats, "message": "ok"}
