import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_cross_entropy_softmax_layernorm(logits, targets, normalized_shape, weight=None,
                                          ignore_index=-100, reduction='mean',
                                          label_smoothing=0.0, eps=1e-05, *, out=None):
    loss = F.cross_entropy(logits, targets, weight=weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    probs = F.softmax(logits, dim=-1)
    normed = F.layer_norm(probs, normalized_shape=(normalized_shape,), weight=None, bias=None,
                          eps=eps)
    if out is not None:
        out.copy_(normed)
        return loss, out
    return loss, normed


def _make(draw, n, ncls, weighted=False, ignore_frac=0.0, with_out=False, **kwargs):
    def make(c):
        x = draw(c, (n, ncls))
        target = c.randint(0, ncls, n)
        kw = dict(kwargs)
        if ignore_frac:
            ignore = kw.get("ignore_index", -100)
            target = torch.where(c.bernoulli(n, p=ignore_frac), torch.full_like(target, ignore),
                                 target)
        if weighted:
            kw["weight"] = c.uniform(ncls, low=0.5, high=2.0, dtype=x.dtype)
        if with_out:
            kw["out"] = torch.zeros(n, ncls, dtype=x.dtype, device=c.device)
        return (x, target, ncls), kw
    return make


def _normal(dtype=torch.float32, std=2.0):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=std)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-4.0, high=4.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=30.0)


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    n = _normal()
    return [
        Case("two_classes", "edge", _make(n, 5, 2, reduction="none")),
        Case("one_row_weighted", "edge", _make(n, 1, 6, weighted=True, label_smoothing=0.1)),
        Case("ignore_custom_index", "edge",
             _make(n, 9, 4, ignore_frac=0.4, ignore_index=3, weighted=True)),
        Case("normal_smoothing_out", "small",
             _make(n, 32, 128, label_smoothing=0.1, with_out=True), dist="normal"),
        Case("normal_weight_ignore", "small",
             _make(n, 77, 100, weighted=True, ignore_frac=0.2, eps=1e-3), dist="normal"),
        Case("normal_bf16_sum", "small", _make(_normal(bf16), 64, 255, reduction="sum"),
             dist="normal"),
        Case("uniform_none", "small", _make(_uniform(), 301, 33, reduction="none"),
             dist="uniform"),
        Case("uniform_bf16_out_smoothing", "small",
             _make(_uniform(bf16), 45, 513, label_smoothing=0.2, with_out=True), dist="uniform"),
        Case("outliers_mean", "small", _make(_outliers(), 128, 129), dist="outliers"),
        Case("outliers_weight_sum", "small",
             _make(_outliers(), 50, 257, weighted=True, reduction="sum", ignore_frac=0.1),
             dist="outliers"),
        Case("perf_f32_vocab32k", "full", _make(n, 8192, 32000), dist="normal"),
        Case("perf_f32_out_4k", "full", _make(n, 16384, 4096, label_smoothing=0.1, with_out=True),
             dist="normal"),
        Case("perf_bf16_2k_none", "full", _make(_uniform(bf16), 32768, 2048, reduction="none"),
             dist="uniform"),
    ]


def cost(logits, targets, normalized_shape, weight=None, ignore_index=-100, reduction='mean',
         label_smoothing=0.0, eps=1e-05, *, out=None):
    n = logits.numel()
    rows = logits.shape[0]
    loss = rows if reduction == "none" else 1
    return {"flops": 12 * n,
            "bytes": (2 * n + loss) * logits.element_size() + targets.numel() * 8}
