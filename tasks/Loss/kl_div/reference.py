import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, BF16 = torch.float32, torch.bfloat16


def kl_div(input, target, reduction="batchmean", log_target=False):
    if reduction == "mean":  # spelled out: F.kl_div warns that its 'mean' may change meaning
        return F.kl_div(input, target, reduction="none", log_target=log_target).mean()
    return F.kl_div(input, target, reduction=reduction, log_target=log_target)


def _logits(c, shape, dist):
    if dist == "uniform":
        return c.uniform(*shape, low=-4.0, high=4.0)
    if dist == "outliers":
        return c.outliers(*shape, frac=0.01, scale=30.0)
    return c.randn(*shape, std=2.0)


def _case(shape, dist="normal", log_target=False, dtype=F32, **kwargs):
    """input: log-probabilities over the last dimension; target: probabilities of an independent
    distribution (or their logarithms when log_target)."""
    def make(c):
        x = torch.log_softmax(_logits(c, shape, dist), dim=-1).to(dtype)
        t = _logits(c, shape, dist)
        t = (torch.log_softmax(t, dim=-1) if log_target else torch.softmax(t, dim=-1)).to(dtype)
        kw = dict(kwargs)
        if log_target:
            kw["log_target"] = True
        return (x, t), kw
    return make


def _one_hot(reduction):
    def make(c):
        x = torch.log_softmax(c.randn(24, 37, std=2.0), dim=-1)
        t = torch.zeros(24, 37, device=c.device)
        t[torch.arange(24, device=c.device), c.randint(0, 37, 24)] = 1.0
        return (x, t), {"reduction": reduction}
    return make


def cases():
    return [
        Case("one_hot_none", "edge", _one_hot("none")),
        Case("one_hot_batchmean", "edge", _one_hot("batchmean")),
        Case("empty_sum", "edge", _case((0, 6), reduction="sum")),
        Case("empty_none", "edge", _case((0, 6), reduction="none")),
        Case("single_row", "edge", _case((1, 5))),
        Case("normal_batchmean", "small", _case((16, 32)), dist="normal"),
        Case("normal_none", "small", _case((37, 53), reduction="none"), dist="normal"),
        Case("normal_log_target", "small", _case((64, 129), log_target=True), dist="normal"),
        Case("normal_3d_batchmean", "small", _case((4, 33, 61)), dist="normal"),
        Case("uniform_mean", "small", _case((77, 250), dist="uniform", reduction="mean"), dist="uniform"),
        Case("uniform_sum_log_target", "small", _case((3, 5, 333), dist="uniform", log_target=True,
                                                      reduction="sum"), dist="uniform"),
        Case("outliers_batchmean", "small", _case((45, 1000), dist="outliers"), dist="outliers"),
        Case("outliers_none_log_target", "small", _case((60, 257), dist="outliers", log_target=True,
                                                        reduction="none"), dist="outliers"),
        Case("bf16_batchmean", "small", _case((64, 1000), dtype=BF16), dist="normal"),
        Case("bf16_none_log_target", "small", _case((33, 301), dtype=BF16, log_target=True, reduction="none"),
             dist="normal"),
        Case("perf_vocab_f32", "full", _case((4096, 32000)), dist="normal"),
        Case("perf_seq_bf16_log_target", "full", _case((4, 2048, 8192), dtype=BF16, log_target=True),
             dist="normal"),
        Case("perf_none_f32", "full", _case((16384, 4096), reduction="none"), dist="normal"),
        Case("perf_sum_f32_log_target", "full", _case((8192, 8192), log_target=True, reduction="sum"),
             dist="normal"),
    ]


def cost(input, target, reduction="batchmean", log_target=False):
    n = input.numel()
    es = input.element_size()
    out = n if reduction == "none" else 1
    return {"flops": 5 * n, "bytes": (2 * n + out) * es}
