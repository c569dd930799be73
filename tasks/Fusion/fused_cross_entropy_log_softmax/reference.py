import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_cross_entropy_log_softmax(input: torch.Tensor, target: torch.Tensor, dim: int = 1,
                                    weight: torch.Tensor = None, ignore_index: int = -100,
                                    reduction: str = 'mean',
                                    label_smoothing: float = 0.0) -> torch.Tensor:
    log_probs = F.log_softmax(input, dim=dim)
    return F.cross_entropy(log_probs, target, weight=weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


def _make(draw, shape, weighted=False, ignore_frac=0.0, soft=False, **kwargs):
    """Logits of `shape` (class dim 1), int64 targets (a fraction ignore_frac set to the
    ignore_index) or, with soft=True, probability targets."""
    def make(c):
        x = draw(c, shape)
        ncls = shape[1]
        kw = dict(kwargs)
        if soft:
            target = torch.softmax(c.randn(shape) * 2.0, dim=1).to(x.dtype)
        else:
            tshape = (shape[0],) + tuple(shape[2:])
            target = c.randint(0, ncls, tshape)
            if ignore_frac:
                ignore = kw.get("ignore_index", -100)
                target = torch.where(c.bernoulli(tshape, p=ignore_frac),
                                     torch.full_like(target, ignore), target)
        if weighted:
            kw["weight"] = c.uniform(ncls, low=0.5, high=2.0, dtype=x.dtype)
        return (x, target), kw
    return make


def _normal(dtype=torch.float32, std=2.0):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=std)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-5.0, high=5.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _extreme(c):
    x = torch.tensor([[1e4, -1e4, 0.0], [-3e4, 2e4, 2e4], [0.0, 0.0, 0.0],
                      [-1e-30, 5.0, -88.0]], device=c.device)
    return (x, torch.tensor([1, 2, 0, 2], device=c.device)), {"reduction": "none"}


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    n = _normal()
    return [
        Case("extreme_logits", "edge", _extreme),
        Case("one_class", "edge", _make(n, (5, 1))),
        Case("one_sample_smoothing", "edge", _make(n, (1, 7), label_smoothing=0.2)),
        Case("ignore_custom_index", "edge",
             _make(n, (9, 4), ignore_frac=0.4, ignore_index=2, weighted=True)),
        Case("dim_last_2d", "edge", _make(n, (6, 5), dim=-1, reduction="none")),
        Case("normal_smoothing", "small", _make(n, (64, 100), label_smoothing=0.1),
             dist="normal"),
        Case("normal_weight_ignore_mean", "small",
             _make(n, (300, 37), weighted=True, ignore_frac=0.2), dist="normal"),
        Case("normal_bf16_sum", "small", _make(_normal(bf16), (128, 257), reduction="sum"),
             dist="normal"),
        Case("normal_3d_dim2", "small", _make(n, (4, 10, 33), dim=2, reduction="none"),
             dist="normal"),
        Case("uniform_soft_targets_smoothing", "small",
             _make(_uniform(), (50, 33), soft=True, label_smoothing=0.05), dist="uniform"),
        Case("uniform_bf16_3d_weight", "small",
             _make(_uniform(bf16), (8, 21, 45), weighted=True, ignore_frac=0.1,
                   label_smoothing=0.1), dist="uniform"),
        Case("outliers_none", "small", _make(_outliers(), (97, 129), reduction="none"),
             dist="outliers"),
        Case("outliers_weight_smoothing_sum", "small",
             _make(_outliers(), (61, 200), weighted=True, label_smoothing=0.3, reduction="sum"),
             dist="outliers"),
        Case("perf_f32_vocab32k", "full", _make(n, (8192, 32000)), dist="normal"),
        Case("perf_bf16_vocab32k_smoothing", "full",
             _make(_normal(bf16), (16384, 32000), label_smoothing=0.1, ignore_frac=0.05),
             dist="normal"),
        Case("perf_f32_vocab128k_none", "full",
             _make(_uniform(), (4096, 128256), reduction="none", weighted=True), dist="uniform"),
    ]


def cost(input, target, dim=1, weight=None, ignore_index=-100, reduction='mean',
         label_smoothing=0.0):
    n = input.numel()
    rows = n // max(input.shape[1], 1)
    out = rows if reduction == "none" else 1
    return {"flops": 6 * n,
            "bytes": (n + out) * input.element_size() + target.numel() * target.element_size()}
