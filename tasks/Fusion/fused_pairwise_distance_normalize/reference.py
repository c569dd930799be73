import torch

from kbx_worker.casegen import Case


def fused_pairwise_distance_normalize(x1: torch.Tensor, x2: torch.Tensor, p_norm: float = 2.0,
                                      eps_norm: float = 1e-12, eps_distance: float = 1e-06,
                                      keepdim: bool = False) -> torch.Tensor:
    norm_x1 = torch.norm(x1, p=p_norm, dim=-1, keepdim=True)
    norm_x2 = torch.norm(x2, p=p_norm, dim=-1, keepdim=True)
    norm_x1 = torch.max(norm_x1, torch.tensor(eps_norm, device=x1.device))
    norm_x2 = torch.max(norm_x2, torch.tensor(eps_norm, device=x2.device))
    x1_normalized = x1 / norm_x1
    x2_normalized = x2 / norm_x2
    diff = x1_normalized.unsqueeze(1) - x2_normalized.unsqueeze(0)
    distance = torch.norm(diff, p=p_norm, dim=-1)
    distance = torch.max(distance, torch.tensor(eps_distance, device=x1.device))
    if keepdim:
        return distance.unsqueeze(-1)
    return distance


def _draw(c, dist, shape, dtype):
    if dist == "uniform":
        t = c.uniform(*shape, low=-1.0, high=1.0)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return t.to(dtype)


def _make(n, m, d, dtype=torch.float32, dist="normal", shared=0, zero_rows=0, **kwargs):
    """x1 (n, d), x2 (m, d); the first `shared` rows of x2 are positive multiples of rows of x1 (so
    their normalized distance is 0 and clamps to eps_distance); the first `zero_rows` rows of x1
    are zero (their norm clamps to eps_norm and they normalize to zero)."""
    def make(c):
        a = _draw(c, dist, (n, d), dtype)
        b = _draw(c, dist, (m, d), dtype)
        if shared:
            scale = torch.tensor([1.0, 2.0, 0.5, 4.0], device=c.device).repeat(shared)[:shared]
            b[:shared] = (a[-shared:].float() * scale[:, None]).to(dtype)
        if zero_rows:
            a[:zero_rows] = 0
        return (a, b), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("duplicates_f32", "edge", _make(9, 11, 16, shared=5)),
        Case("duplicates_keepdim_bf16", "edge", _make(7, 6, 33, dtype=bf16, shared=3, keepdim=True)),
        Case("zero_rows_f32", "edge", _make(8, 5, 12, zero_rows=3)),
        Case("one_dim_p1_f32", "edge", _make(13, 17, 1, p_norm=1.0)),
        Case("empty_f32", "edge", _make(0, 4, 8)),
        Case("normal_f32", "small", _make(64, 80, 48), dist="normal"),
        Case("normal_f32_p1_keepdim", "small", _make(37, 29, 65, p_norm=1.0, keepdim=True),
             dist="normal"),
        Case("uniform_f32_p3", "small", _make(31, 47, 24, dist="uniform", p_norm=3.0),
             dist="uniform"),
        Case("uniform_f16", "small", _make(40, 33, 64, dtype=f16, dist="uniform", shared=4),
             dist="uniform"),
        Case("outliers_bf16", "small", _make(45, 50, 27, dtype=bf16, dist="outliers"),
             dist="outliers"),
        Case("outliers_f32_eps", "small",
             _make(33, 21, 40, dist="outliers", shared=6, eps_distance=1e-3, eps_norm=1e-6),
             dist="outliers"),
        Case("perf_f32_4096x4096x128", "full", _make(4096, 4096, 128), dist="normal"),
        Case("perf_f32_p1_2048x8192x64", "full", _make(2048, 8192, 64, p_norm=1.0), dist="normal"),
        Case("perf_bf16_4096x4096x256", "full", _make(4096, 4096, 256, dtype=bf16, shared=64),
             dist="normal"),
        Case("perf_f16_odd", "full", _make(3001, 5003, 96, dtype=f16, dist="uniform"),
             dist="uniform"),
    ]


def cost(x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-06, keepdim=False):
    n, d = x1.shape
    m = x2.shape[0]
    size = x1.element_size()
    return {"flops": 3 * n * m * d + 4 * (n + m) * d,
            "bytes": (x1.numel() + x2.numel() + n * m) * size}
