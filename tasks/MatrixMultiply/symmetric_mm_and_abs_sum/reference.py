import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def symmetric_mm_and_abs_sum(A: torch.Tensor, C: torch.Tensor, alpha: float,
                             beta: float) -> torch.Tensor:
    C = alpha * torch.mm(A, A.T) + beta * C
    return torch.sum(torch.abs(C))


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype, scale=10.0 if dtype == F16 else 1000.0)
    raise ValueError(dist)


def _make(dist, n, m, alpha, beta, dtype=F32):
    """A (n, m), C (n, n)."""
    def make(c):
        return (_draw(c, dist, n, m, dtype=dtype), _draw(c, dist, n, n, dtype=dtype), alpha,
                beta), {}
    return make


def _fixed(a, cc, alpha, beta):
    def make(c):
        t = lambda v: torch.tensor(v, device=c.device)  # noqa: E731
        return (t(a), t(cc), alpha, beta), {}
    return make


def cases():
    return [
        Case("fixed_1", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[0.5, 0.5], [0.5, 0.5]], 1.0, 1.0)),
        Case("fixed_2", "edge", _fixed([[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], 0.5, 2.0)),
        Case("fixed_zero_a", "edge", _fixed([[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]],
                                            1.0, 1.0)),
        Case("fixed_negative", "edge", _fixed([[-1.0, -2.0], [-3.0, -4.0]],
                                              [[-0.5, -0.5], [-0.5, -0.5]], 1.0, 1.0)),
        Case("empty_n", "edge", _make("normal", 0, 4, 1.0, 1.0)),
        Case("normal_f32", "small", _make("normal", 64, 128, 1.0, 0.5), dist="normal"),
        Case("uniform_f32", "small", _make("uniform", 128, 64, 0.5, -2.0), dist="uniform"),
        Case("outliers_f32", "small", _make("outliers", 70, 45, 1.0, 0.5), dist="outliers"),
        Case("normal_f16", "small", _make("normal", 45, 70, 1 / 256, 1 / 64, dtype=F16),
             dist="normal"),
        Case("outliers_bf16", "small", _make("outliers", 80, 40, 0.5, 1.0, dtype=BF16),
             dist="outliers"),
        Case("perf_bf16_8192", "full", _make("normal", 8192, 8192, 1 / 64, 0.5, dtype=BF16),
             dist="normal"),
        Case("perf_bf16_4096x16384", "full", _make("uniform", 4096, 16384, 1 / 128, 0.5,
                                                   dtype=BF16), dist="uniform"),
        Case("perf_f16_2048x8192", "full", _make("normal", 2048, 8192, 2 ** -20, 2 ** -14,
                                                 dtype=F16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", 4096, 4096, 1.0, 0.5), dist="normal"),
    ]


def cost(A, C, alpha, beta):
    n, m = A.shape
    # A @ A^T is symmetric: n(n+1)/2 distinct dot products of length m
    return {"flops": n * (n + 1) * m + 4 * n * n,
            "bytes": (A.numel() + C.numel() + 1) * A.element_size()}
