import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def smooth_l1_loss(input, target, beta=1.0, reduction="mean"):
    return F.smooth_l1_loss(input, target, beta=beta, reduction=reduction)


def _pair(c, shape, dist, dtype):
    if dist == "uniform":
        x, t = c.uniform(*shape, low=-3, high=3), c.uniform(*shape, low=-3, high=3)
    elif dist == "outliers":
        x, t = c.outliers(*shape, frac=0.02, scale=100.0), c.randn(*shape)
    else:
        x, t = c.randn(*shape), c.randn(*shape)
    return x.to(dtype), t.to(dtype)


def _case(shape, dist="normal", dtype=F32, **kwargs):
    return lambda c: (_pair(c, shape, dist, dtype), kwargs)


def _special(c):
    # Differences exactly at, just below and just above beta, zero, infinities and NaN.
    x = torch.tensor([0.0, 0.5, 0.5, 0.5, -1.0, 3.0, float("inf"), float("-inf"), float("nan"), 2.0, -0.0],
                     device=c.device)
    t = torch.tensor([0.0, 0.0, 1.5, -0.49, 0.0, 3.0, 0.0, 1.0, 0.0, float("nan"), 0.0], device=c.device)
    return (x, t), {"beta": 1.0, "reduction": "none"}


def _special_l1(c):
    (x, t), _ = _special(c)
    return (x, t), {"beta": 0.0, "reduction": "none"}


def cases():
    return [
        Case("special_none", "edge", _special),
        Case("special_beta0_none", "edge", _special_l1),
        Case("empty_sum", "edge", _case((0,), reduction="sum")),
        Case("empty_none", "edge", _case((0, 3), reduction="none")),
        Case("scalar_mean", "edge", _case(())),
        Case("normal_mean", "small", _case((4096,)), dist="normal"),
        Case("normal_sum_beta05", "small", _case((4099,), beta=0.5, reduction="sum"), dist="normal"),
        Case("normal_none_beta01", "small", _case((32, 129), beta=0.1, reduction="none"), dist="normal"),
        Case("uniform_mean_beta2", "small", _case((61, 333), dist="uniform", beta=2.0), dist="uniform"),
        Case("uniform_none_beta0", "small", _case((3, 5, 401), dist="uniform", beta=0.0, reduction="none"),
             dist="uniform"),
        Case("outliers_mean", "small", _case((300, 41), dist="outliers"), dist="outliers"),
        Case("outliers_none", "small", _case((7919,), dist="outliers", beta=0.25, reduction="none"),
             dist="outliers"),
        Case("f16_mean", "small", _case((64, 257), dtype=F16), dist="normal"),
        Case("bf16_none", "small", _case((1001, 3), dtype=BF16, beta=0.5, reduction="none"), dist="normal"),
        Case("perf_mean_16M", "full", _case((4096, 4096)), dist="normal"),
        Case("perf_sum_64M", "full", _case((8192, 8192), beta=0.5, reduction="sum"), dist="normal"),
        Case("perf_none_32M", "full", _case((4096, 8192), reduction="none"), dist="normal"),
        Case("perf_bf16_mean_64M", "full", _case((8192, 8192), dtype=BF16, beta=0.1), dist="normal"),
    ]


def cost(input, target, beta=1.0, reduction="mean"):
    n = input.numel()
    es = input.element_size()
    out = n if reduction == "none" else 1
    return {"flops": 5 * n, "bytes": (2 * n + out) * es}
