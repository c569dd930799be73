import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, BF16 = torch.float32, torch.bfloat16


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    return F.binary_cross_entropy(input, target, weight=weight, reduction=reduction)


def _probs(c, shape, dist, dtype):
    if dist == "uniform":
        p = c.uniform(*shape, low=0.0, high=1.0)
    elif dist == "outliers":  # saturated probabilities: many exactly 0 or 1 after the sigmoid
        p = torch.sigmoid(c.outliers(*shape, frac=0.05, scale=100.0))
    else:  # "logits": sigmoid of moderate logits
        p = torch.sigmoid(c.randn(*shape, std=2.0))
    return p.to(dtype)


def _targets(c, shape, hard, dtype):
    if hard:
        return c.bernoulli(*shape, p=0.5).to(dtype)
    return c.uniform(*shape).to(dtype)


def _case(shape, dist="logits", hard=True, weight=None, dtype=F32, **kwargs):
    """weight: None, "full" (input's shape) or "row" (last dimension only, broadcast)."""
    def make(c):
        x = _probs(c, shape, dist, dtype)
        t = _targets(c, shape, hard, dtype)
        kw = dict(kwargs)
        if weight == "full":
            kw["weight"] = c.uniform(*shape, low=0.1, high=2.0).to(dtype)
        elif weight == "row":
            kw["weight"] = c.uniform(shape[-1], low=0.1, high=2.0).to(dtype)
        return (x, t), kw
    return make


def _saturated(c):
    # Probabilities of exactly 0 and 1 (and a subnormal): each log term is clamped at -100.
    x = torch.tensor([0.0, 0.0, 1.0, 1.0, 0.5, 1e-44, 1.0 - 2.0 ** -24, 0.25], device=c.device)
    t = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.75], device=c.device)
    x = torch.cat([x, torch.sigmoid(c.randn(8))])
    t = torch.cat([t, c.uniform(8)])
    return (x, t), {"reduction": "none"}


def _saturated_mean(c):
    (x, t), _ = _saturated(c)
    return (x, t), {"reduction": "mean"}


def cases():
    return [
        Case("saturated_none", "edge", _saturated),
        Case("saturated_mean", "edge", _saturated_mean),
        Case("empty_sum", "edge", _case((0,), reduction="sum")),
        Case("empty_none", "edge", _case((0, 4), reduction="none")),
        Case("scalar_none", "edge", _case((), reduction="none")),
        Case("logits_mean", "small", _case((1024,)), dist="logits"),
        Case("logits_mean_weight", "small", _case((64, 129), weight="full"), dist="logits"),
        Case("logits_none", "small", _case((37, 53), reduction="none"), dist="logits"),
        Case("soft_sum_rowweight", "small", _case((61, 77), dist="uniform", hard=False, weight="row",
                                                  reduction="sum"), dist="uniform"),
        Case("soft_none", "small", _case((4099,), dist="uniform", hard=False, reduction="none"),
             dist="uniform"),
        Case("saturating_mean", "small", _case((300, 41), dist="outliers"), dist="outliers"),
        Case("saturating_none_weight", "small", _case((3, 5, 333), dist="outliers", hard=False,
                                                      weight="full", reduction="none"), dist="outliers"),
        Case("bf16_mean", "small", _case((64, 257), dtype=BF16), dist="logits"),
        Case("bf16_none", "small", _case((1001,), dist="uniform", hard=False, dtype=BF16, reduction="none"),
             dist="uniform"),
        Case("perf_mean_16M", "full", _case((4096, 4096)), dist="logits"),
        Case("perf_none_64M", "full", _case((8192, 8192), hard=False, reduction="none"), dist="logits"),
        Case("perf_mean_weight_32M", "full", _case((4096, 8192), weight="full"), dist="logits"),
        Case("perf_bf16_sum_64M", "full", _case((8192, 8192), dtype=BF16, weight="row", reduction="sum"),
             dist="logits"),
    ]


def cost(input, target, weight=None, reduction="mean"):
    n = input.numel()
    es = input.element_size()
    moved = 2 * n + (weight.numel() if weight is not None else 0) + (n if reduction == "none" else 1)
    return {"flops": 8 * n, "bytes": moved * es}
