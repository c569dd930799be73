import math

import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def tensordot_rsqrt(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    result = torch.tensordot(a, b, dims=dims)
    return torch.rsqrt(result)


def _positive(c, dist, *shape, dtype=F32):
    """Strictly positive values (>= 1e-3), so every contraction is a sum of positive terms."""
    if dist == "normal":
        t = c.randn(*shape).abs() + 1e-3
    elif dist == "uniform":
        t = c.uniform(*shape, low=1e-3, high=1.0)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=10.0 if dtype == F16 else 1000.0).abs() + 1e-3
    else:
        raise ValueError(dist)
    return t.to(dtype)


def _make(dist, a_shape, b_shape, dims, dtype=F32):
    return lambda c: ((_positive(c, dist, *a_shape, dtype=dtype),
                       _positive(c, dist, *b_shape, dtype=dtype), dims), {})


def _fixed(a, b, dims):
    return lambda c: ((torch.tensor(a, device=c.device), torch.tensor(b, device=c.device), dims),
                      {})


def cases():
    return [
        Case("fixed_vectors", "edge", _fixed([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], 1)),
        Case("fixed_matrices", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]],
                                              ([1], [0]))),
        Case("fixed_3d", "edge", _fixed([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                                        [[[9.0, 10.0], [11.0, 12.0]], [[13.0, 14.0], [15.0, 16.0]]],
                                        ([2], [1]))),
        Case("zero_and_negative", "edge",
             _fixed([[1.0, 2.0], [0.0, 0.0], [-1.0, -3.0]], [[1.0, 0.5], [1.0, 2.0]], 1)),
        Case("empty_contraction", "edge",
             lambda c: ((c.randn(3, 0), c.randn(0, 4), 1), {})),
        Case("normal_f32_dims1", "small", _make("normal", (32, 64), (64, 32), 1), dist="normal"),
        Case("uniform_f16_two_axes", "small",
             _make("uniform", (4, 8, 16), (16, 8, 4), ([2, 1], [0, 1]), dtype=F16),
             dist="uniform"),
        Case("outliers_bf16_list_dims", "small",
             _make("outliers", (20, 30, 6), (6, 30, 11), [[1, 2], [1, 0]], dtype=BF16),
             dist="outliers"),
        Case("normal_f32_dims2", "small", _make("normal", (10, 12, 9), (12, 9, 7), 2),
             dist="normal"),
        Case("uniform_f32_outer", "small", _make("uniform", (40,), (3, 50), 0), dist="uniform"),
        Case("perf_f16_8192x4096x8192", "full",
             _make("normal", (8192, 4096), (4096, 8192), 1, dtype=F16), dist="normal"),
        Case("perf_bf16_3d_by_2d", "full",
             _make("uniform", (64, 64, 4096), (4096, 8192), 1, dtype=BF16), dist="uniform"),
        Case("perf_bf16_dims2", "full",
             _make("normal", (4096, 32, 128), (32, 128, 4096), 2, dtype=BF16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", (4096, 4096), (4096, 4096), ([1], [0])),
             dist="normal"),
    ]


def _contracted(a, dims):
    if isinstance(dims, int):
        return list(range(a.dim() - dims, a.dim()))
    return list(dims[0])


def cost(a, b, dims):
    k = math.prod(a.shape[i] for i in _contracted(a, dims))
    out = a.numel() // max(k, 1) * (b.numel() // max(k, 1))
    return {"flops": 2 * out * k + 2 * out,
            "bytes": (a.numel() + b.numel() + out) * a.element_size()}
