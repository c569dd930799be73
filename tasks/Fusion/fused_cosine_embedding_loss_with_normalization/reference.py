import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_cosine_embedding_loss_with_normalization(input1: torch.Tensor, input2: torch.Tensor,
                                                   target: torch.Tensor, margin: float = 0,
                                                   reduction: str = 'mean') -> torch.Tensor:
    cos = torch.sum(F.normalize(input1, p=2, dim=1) * F.normalize(input2, p=2, dim=1), dim=1)
    loss = torch.clamp(1 - cos * target.float(), min=0)
    if margin > 0:
        loss = torch.max(loss, margin - cos)
    if reduction == 'mean':
        return loss.mean()
    if reduction == 'sum':
        return loss.sum()
    if reduction == 'none':
        return loss
    raise ValueError(f"Invalid reduction method: {reduction}")


def _make(draw, n, d, **kwargs):
    def make(c):
        target = c.randint(0, 2, n) * 2 - 1
        return (draw(c, (n, d)), draw(c, (n, d)), target), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-0.5, high=1.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _structured(c):
    x1 = c.randn(6, 9)
    x2 = x1.clone()
    x2[1] = -2.0 * x1[1]      # opposite: cos = -1
    x2[2] = 0.0               # zero row: cos = 0
    x1[3] = 0.0
    x2[4] = 3.0 * x1[4]       # parallel: cos = 1
    target = torch.tensor([1, 1, -1, 1, -1, -1], device=c.device)
    return (x1, x2, target), {"margin": 0.25, "reduction": "none"}


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    return [
        Case("structured_rows", "edge", _structured),
        Case("single_row_sum", "edge", _make(_normal(), 1, 5, reduction="sum")),
        Case("single_column", "edge", _make(_normal(), 7, 1, reduction="none", margin=0.5)),
        Case("normal_mean", "small", _make(_normal(), 128, 256), dist="normal"),
        Case("normal_margin_none", "small",
             _make(_normal(), 301, 65, margin=0.5, reduction="none"), dist="normal"),
        Case("normal_bf16_sum_margin", "small",
             _make(_normal(bf16), 257, 129, margin=0.3, reduction="sum"), dist="normal"),
        Case("uniform_negative_margin", "small",
             _make(_uniform(), 99, 333, margin=-0.5, reduction="mean"), dist="uniform"),
        Case("uniform_bf16_none", "small", _make(_uniform(bf16), 513, 63, reduction="none"),
             dist="uniform"),
        Case("outliers_mean_margin", "small", _make(_outliers(), 200, 300, margin=0.9),
             dist="outliers"),
        Case("perf_f32_mean_margin", "full", _make(_normal(), 65536, 1024, margin=0.5),
             dist="normal"),
        Case("perf_bf16_none", "full", _make(_normal(bf16), 16384, 4096, reduction="none"),
             dist="normal"),
        Case("perf_f32_narrow_sum", "full", _make(_uniform(), 1 << 20, 128, reduction="sum"),
             dist="uniform"),
    ]


def cost(input1, input2, target, margin=0, reduction='mean'):
    n, d = input1.shape
    out_bytes = 4 * n if reduction == "none" else 4
    return {"flops": 6 * n * d + 6 * n,
            "bytes": 2 * n * d * input1.element_size() + n * target.element_size() + out_bytes}
