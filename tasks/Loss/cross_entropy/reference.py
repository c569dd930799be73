import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return F.cross_entropy(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


def _logits(c, shape, dist):
    if dist == "uniform":
        return c.uniform(*shape, low=-4.0, high=4.0)
    if dist == "outliers":
        return c.outliers(*shape, frac=0.01, scale=100.0)
    return c.randn(*shape, std=3.0)


def _case(n, C, spatial=(), dist="logits", dtype=F32, weight=False, ignore_frac=0.0, ignore_index=-100,
          **kwargs):
    """Logits (n, C, *spatial), targets (n, *spatial); a fraction ignore_frac of targets set to
    ignore_index (when ignore_index is a class, targets of that class are ignored as well)."""
    def make(c):
        x = _logits(c, (n, C) + spatial, dist).to(dtype)
        t = c.randint(0, C, n, *spatial)
        if ignore_frac:
            t = torch.where(c.bernoulli(n, *spatial, p=ignore_frac), torch.full_like(t, ignore_index), t)
        kw = dict(kwargs)
        if weight:
            kw["weight"] = c.uniform(C, low=0.2, high=2.0).to(dtype)
        if ignore_index != -100:
            kw["ignore_index"] = ignore_index
        return (x, t), kw
    return make


def _masked_logits(c):
    # -inf logits (masked classes) anywhere except at the target class.
    x = c.randn(24, 40, std=2.0)
    t = c.randint(0, 40, 24)
    mask = c.bernoulli(24, 40, p=0.3)
    mask[torch.arange(24, device=c.device), t] = False
    return (torch.where(mask, torch.full_like(x, float("-inf")), x), t), {"reduction": "none"}


def _extreme_logits(c):
    x = c.randn(16, 33) * 1e4
    return (x, c.randint(0, 33, 16)), {"reduction": "none"}


def cases():
    return [
        Case("all_ignored_mean", "edge", _case(4, 5, ignore_frac=1.0)),
        Case("all_ignored_sum", "edge", _case(4, 5, ignore_frac=1.0, reduction="sum")),
        Case("masked_logits", "edge", _masked_logits),
        Case("extreme_logits", "edge", _extreme_logits),
        Case("one_class", "edge", _case(6, 1, reduction="none")),
        Case("empty_batch_sum", "edge", _case(0, 7, reduction="sum")),
        Case("ignore_class_2", "edge", _case(50, 5, ignore_index=2, weight=True)),
        Case("logits_mean", "small", _case(32, 10), dist="logits"),
        Case("logits_mean_ignore", "small", _case(97, 129, ignore_frac=0.2), dist="logits"),
        Case("logits_weight_mean", "small", _case(64, 301, weight=True, ignore_frac=0.1), dist="logits"),
        Case("spatial_mean", "small", _case(2, 10, (8, 8)), dist="logits"),
        Case("spatial_none_weight", "small", _case(3, 7, (9, 13), weight=True, ignore_frac=0.1,
                                                   reduction="none"), dist="logits"),
        Case("uniform_sum", "small", _case(77, 250, dist="uniform", reduction="sum"), dist="uniform"),
        Case("outliers_none", "small", _case(45, 1000, dist="outliers", reduction="none"), dist="outliers"),
        Case("outliers_mean_3d", "small", _case(4, 19, (333,), dist="outliers", weight=True), dist="outliers"),
        Case("bf16_mean", "small", _case(64, 1000, dtype=BF16, ignore_frac=0.1), dist="logits"),
        Case("f16_none", "small", _case(50, 999, dtype=F16, reduction="none"), dist="logits"),
        Case("perf_vocab_f32", "full", _case(4096, 32000), dist="logits"),
        Case("perf_vocab_bf16", "full", _case(8192, 50257, dtype=BF16, ignore_frac=0.05), dist="logits"),
        Case("perf_segment_f32", "full", _case(16, 19, (256, 512), weight=True), dist="logits"),
        Case("perf_tokens_bf16_none", "full", _case(32768, 4096, dtype=BF16, reduction="none"),
             dist="logits"),
    ]


def cost(input, target, weight=None, ignore_index=-100, reduction="mean"):
    n = input.numel()
    rows = target.numel()
    out = rows if reduction == "none" else 1
    es = input.element_size()
    return {"flops": 5 * n, "bytes": n * es + rows * 8 + out * es + (weight.numel() * es if weight is not None else 0)}
