import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_pairwise_distance_adaptive_avg_pool2d(x1: torch.Tensor, x2: torch.Tensor, output_size,
                                                p: float = 2.0, eps: float = 1e-06,
                                                keepdim: bool = False) -> torch.Tensor:
    pooled_x1 = F.adaptive_avg_pool2d(x1, output_size)
    pooled_x2 = F.adaptive_avg_pool2d(x2, output_size)
    diff = pooled_x1 - pooled_x2
    return torch.norm(diff, p=p, dim=(1, 2, 3), keepdim=keepdim) + eps


def _draw(c, dist, shape, dtype):
    if dist == "uniform":
        t = c.uniform(*shape, low=0.0, high=1.0)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return t.to(dtype)


def _make(shape, output_size, dtype=torch.float32, dist="normal", same=False, **kwargs):
    def make(c):
        a = _draw(c, dist, shape, dtype)
        b = a.clone() if same else _draw(c, dist, shape, dtype)
        return (a, b, output_size), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    inf = float("inf")
    return [
        Case("identical_f32", "edge", _make((3, 4, 9, 8), (3, 2), same=True)),
        Case("identical_keepdim_bf16", "edge",
             _make((2, 3, 8, 8), 4, dtype=bf16, same=True, keepdim=True)),
        Case("global_pool_p1_f32", "edge", _make((5, 7, 6, 5), 1, p=1.0)),
        Case("p_inf_f32", "edge", _make((4, 3, 10, 11), (4, 4), p=inf)),
        Case("empty_batch_f32", "edge", _make((0, 3, 8, 8), 2)),
        Case("normal_f32", "small", _make((4, 16, 32, 24), (8, 6)), dist="normal"),
        Case("normal_f32_keepdim_eps", "small", _make((3, 8, 23, 19), (5, 7), keepdim=True, eps=0.5),
             dist="normal"),
        Case("uniform_f32_p1", "small", _make((2, 3, 32, 32), (8, 8), dist="uniform", p=1.0),
             dist="uniform"),
        Case("uniform_f16_p3", "small", _make((2, 8, 33, 35), (4, 9), dtype=f16, dist="uniform",
                                              p=3.0), dist="uniform"),
        Case("outliers_bf16", "small", _make((4, 6, 27, 21), (3, 3), dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32_upsample", "small", _make((3, 5, 6, 7), (9, 10), dist="outliers"),
             dist="outliers"),
        Case("perf_f32_56_to_7", "full", _make((64, 256, 56, 56), 7), dist="normal"),
        Case("perf_bf16_global", "full", _make((128, 512, 28, 28), 1, dtype=bf16), dist="normal"),
        Case("perf_f16_112_to_14_p1", "full",
             _make((32, 128, 112, 112), (14, 14), dtype=f16, p=1.0), dist="normal"),
        Case("perf_f32_odd_overlap", "full", _make((32, 192, 75, 75), (9, 11), dist="uniform"),
             dist="uniform"),
    ]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def cost(x1, x2, output_size, p=2.0, eps=1e-06, keepdim=False):
    oh, ow = _pair(output_size)
    n, ch = x1.shape[0], x1.shape[1]
    pooled = n * ch * oh * ow
    size = x1.element_size()
    return {"flops": 2 * x1.numel() + 4 * pooled, "bytes": 2 * x1.numel() * size + n * size}
