import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def matrix_multiply_and_row_dot(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float,
                                C: torch.Tensor) -> torch.Tensor:
    C = alpha * torch.mm(A, B) + beta * C
    return torch.dot(C[0], C[1])


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype, scale=20.0 if dtype == F16 else 1000.0)
    raise ValueError(dist)


def _make(dist, n, m, p, alpha, beta, dtype=F32):
    def make(c):
        A = _draw(c, dist, n, m, dtype=dtype)
        B = _draw(c, dist, m, p, dtype=dtype)
        C = _draw(c, dist, n, p, dtype=dtype)
        return (A, B, alpha, beta, C), {}
    return make


def _fixed(a, b, alpha, beta, cc):
    def make(c):
        t = lambda v: torch.tensor(v, device=c.device)  # noqa: E731
        return (t(a), t(b), alpha, beta, t(cc)), {}
    return make


def cases():
    return [
        Case("fixed_beta0", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]],
                                           1.0, 0.0, [[0.0, 0.0], [0.0, 0.0]])),
        Case("fixed_half_half", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]],
                                               0.5, 0.5, [[1.0, 1.0], [1.0, 1.0]])),
        Case("fixed_identity", "edge", _fixed([[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]],
                                              2.0, 0.5, [[2.0, 2.0], [2.0, 2.0]])),
        Case("empty_m", "edge", _make("normal", 2, 0, 6, 1.0, 0.5)),
        Case("normal_f32", "small", _make("normal", 64, 128, 64, 1.0, 0.5), dist="normal"),
        Case("uniform_f32", "small", _make("uniform", 33, 70, 45, -0.75, 2.0), dist="uniform"),
        Case("outliers_f32", "small", _make("outliers", 20, 50, 30, 1.0, 0.5), dist="outliers"),
        Case("normal_f16", "small", _make("normal", 37, 96, 81, 0.125, 1.0, dtype=F16),
             dist="normal"),
        Case("outliers_bf16", "small", _make("outliers", 9, 120, 100, 0.5, -1.0, dtype=BF16),
             dist="outliers"),
        Case("perf_f16_4096", "full", _make("normal", 4096, 4096, 4096, 1 / 64, 0.5, dtype=F16),
             dist="normal"),
        Case("perf_bf16_8192", "full", _make("uniform", 8192, 8192, 8192, 1 / 64, 0.5,
                                             dtype=BF16), dist="uniform"),
        Case("perf_bf16_wide", "full", _make("normal", 2048, 8192, 16384, 1 / 90.5, 0.5,
                                             dtype=BF16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", 4096, 4096, 4096, 1.0, 0.5),
             dist="normal"),
    ]


def cost(A, B, alpha, beta, C):
    m, p = B.shape
    # only rows 0 and 1 of the product are needed: they read two rows of A, all of B, two of C
    elems = 2 * m + B.numel() + 2 * p + 1
    return {"flops": 4 * m * p + 6 * p, "bytes": elems * A.element_size()}
