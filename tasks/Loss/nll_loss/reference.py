import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return F.nll_loss(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


def _log_probs(c, shape, dist, dtype):
    if dist == "uniform":
        x = c.uniform(*shape, low=-4.0, high=4.0)
    elif dist == "outliers":
        x = c.outliers(*shape, frac=0.01, scale=100.0)
    else:
        x = c.randn(*shape, std=3.0)
    return torch.log_softmax(x, dim=1).to(dtype)


def _case(n, C, spatial=(), dist="logits", dtype=F32, weight=False, ignore_frac=0.0, ignore_index=-100,
          **kwargs):
    """Log-probabilities (n, C, *spatial) from a log_softmax over dimension 1, targets (n, *spatial),
    a fraction ignore_frac of them set to ignore_index."""
    def make(c):
        x = _log_probs(c, (n, C) + spatial, dist, dtype)
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


def _arbitrary_scores(c):
    # nll_loss only gathers and negates: the input need not be normalised, and may hold -inf.
    x = c.randn(20, 9, std=10.0)
    x[3, 4] = float("-inf")
    t = c.randint(0, 9, 20)
    t[3] = 4
    return (x, t), {"reduction": "none"}


def cases():
    return [
        Case("all_ignored_mean", "edge", _case(4, 5, ignore_frac=1.0)),
        Case("all_ignored_sum", "edge", _case(4, 5, ignore_frac=1.0, reduction="sum")),
        Case("arbitrary_scores", "edge", _arbitrary_scores),
        Case("empty_batch_sum", "edge", _case(0, 7, reduction="sum")),
        Case("ignore_class_0", "edge", _case(50, 5, ignore_index=0, weight=True)),
        Case("logits_mean", "small", _case(32, 10), dist="logits"),
        Case("logits_weight_mean", "small", _case(64, 301, weight=True, ignore_frac=0.1), dist="logits"),
        Case("logits_none_ignore", "small", _case(97, 129, ignore_frac=0.2, reduction="none"), dist="logits"),
        Case("spatial_mean_weight", "small", _case(3, 7, (9, 13), weight=True, ignore_frac=0.1),
             dist="logits"),
        Case("spatial_none", "small", _case(2, 10, (8, 8), reduction="none"), dist="logits"),
        Case("uniform_sum", "small", _case(77, 250, dist="uniform", reduction="sum"), dist="uniform"),
        Case("outliers_mean", "small", _case(45, 1000, dist="outliers"), dist="outliers"),
        Case("outliers_sum_3d", "small", _case(4, 19, (333,), dist="outliers", weight=True, reduction="sum"),
             dist="outliers"),
        Case("bf16_mean", "small", _case(64, 1000, dtype=BF16, ignore_frac=0.1), dist="logits"),
        Case("f16_none", "small", _case(50, 999, dtype=F16, reduction="none"), dist="logits"),
        Case("perf_vocab_f32", "full", _case(8192, 32000, ignore_frac=0.05), dist="logits"),
        Case("perf_many_rows_weight", "full", _case(1 << 20, 100, weight=True), dist="logits"),
        Case("perf_segment_bf16", "full", _case(16, 21, (512, 512), dtype=BF16, weight=True), dist="logits"),
        Case("perf_rows_none", "full", _case(1 << 22, 10, reduction="none"), dist="logits"),
    ]


def cost(input, target, weight=None, ignore_index=-100, reduction="mean"):
    # Only one input element per target position is needed; count a 32-byte memory sector for it
    # (the gathered elements are spread out), or the whole row when a row is smaller than that.
    rows = target.numel()
    C = input.shape[1] if input.dim() > 1 else input.numel()
    es = input.element_size()
    per = min(32, C * es) if input.dim() == 2 else 32
    out = rows if reduction == "none" else 1
    w = weight.numel() * es if weight is not None else 0
    return {"flops": 3 * rows, "bytes": rows * (per + 8) + out * es + w}
