import torch

from kbx_worker.casegen import Case


def normalize_pairwise_distance(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2,
                                dim_norm=1, eps_norm=1e-12):
    dist = torch.norm(x1 - x2, p=p_distance, dim=-1, keepdim=keepdim) + eps_distance
    return dist / torch.norm(dist, p=p_norm, dim=dim_norm, keepdim=True).clamp(min=eps_norm)


def _pair(make, **kwargs):
    return lambda c: ((make(c), make(c)), kwargs)


def _fixed(a, b, **kwargs):
    return lambda c: ((torch.tensor(a, device=c.device), torch.tensor(b, device=c.device)), kwargs)


def _equal(shape, **kwargs):
    def make(c):
        x = c.randn(*shape)
        return (x, x.clone()), kwargs
    return make


def cases():
    bf16 = torch.bfloat16
    return [
        Case("fixed_2x2_dim0", "edge",
             _fixed([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [2.5, 4.0]], dim_norm=0)),
        Case("fixed_2x2_p1_dim0", "edge",
             _fixed([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [2.5, 4.0]], p_distance=1.0, dim_norm=0)),
        Case("equal_inputs", "edge", _equal((3, 5, 8))),
        Case("empty_feature_dim", "edge", _pair(lambda c: c.randn(2, 6, 0))),
        Case("empty_rows", "edge", _pair(lambda c: c.randn(3, 0, 4))),
        Case("p_inf_keepdim", "edge", _pair(lambda c: c.randn(4, 9, 7), p_distance=float("inf"),
                                            keepdim=True)),
        Case("normal_f32", "small", _pair(lambda c: c.randn(16, 64, 48)), dist="normal"),
        Case("normal_f32_p1", "small", _pair(lambda c: c.randn(16, 64, 48), p_distance=1.0),
             dist="normal"),
        Case("uniform_f32_keepdim_pnorm1", "small",
             _pair(lambda c: c.uniform(7, 33, 65, low=-2, high=2), keepdim=True, p_norm=1),
             dist="uniform"),
        Case("outliers_f32_p3", "small", _pair(lambda c: c.outliers(5, 40, 37), p_distance=3.0),
             dist="outliers"),
        Case("normal_f32_2d_dim0", "small", _pair(lambda c: c.randn(31, 100), dim_norm=0),
             dist="normal"),
        Case("normal_f32_4d_dim2", "small", _pair(lambda c: c.randn(3, 5, 11, 13), dim_norm=2,
                                                  eps_distance=1e-3), dist="normal"),
        Case("normal_bf16_dim0", "small", _pair(lambda c: c.randn(9, 50, 64, dtype=bf16), dim_norm=0),
             dist="normal"),
        Case("outliers_bf16", "small", _pair(lambda c: c.outliers(6, 77, 33, dtype=bf16)),
             dist="outliers"),
        Case("perf_f32_64x4096x256", "full", _pair(lambda c: c.randn(64, 4096, 256)), dist="normal"),
        Case("perf_f32_256x1024x128_p1", "full",
             _pair(lambda c: c.randn(256, 1024, 128), p_distance=1.0), dist="normal"),
        Case("perf_f32_32x16384x64_keepdim", "full",
             _pair(lambda c: c.uniform(32, 16384, 64, low=-1, high=1), keepdim=True), dist="uniform"),
        Case("perf_bf16_128x4096x512", "full", _pair(lambda c: c.randn(128, 4096, 512, dtype=bf16)),
             dist="normal"),
    ]


def cost(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1,
         eps_norm=1e-12):
    n = x1.numel()
    rows = n // max(x1.shape[-1], 1)
    es = x1.element_size()
    return {"flops": 3 * n + 4 * rows, "bytes": 2 * n * es + rows * es}
