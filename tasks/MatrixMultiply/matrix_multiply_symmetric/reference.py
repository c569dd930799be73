import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def matrix_multiply_symmetric(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float,
                              beta: float) -> torch.Tensor:
    C = alpha * torch.mm(A, B) + beta * C
    C = alpha * torch.mm(C, C.T) + beta * C
    return C


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype, scale=10.0 if dtype == F16 else 100.0)
    raise ValueError(dist)


def _make(dist, n, m, alpha, beta, dtype=F32):
    """A (n, m), B (m, n), C (n, n)."""
    def make(c):
        A = _draw(c, dist, n, m, dtype=dtype)
        B = _draw(c, dist, m, n, dtype=dtype)
        C = _draw(c, dist, n, n, dtype=dtype)
        return (A, B, C, alpha, beta), {}
    return make


def _fixed(a, b, cc, alpha, beta):
    def make(c):
        t = lambda v: torch.tensor(v, device=c.device)  # noqa: E731
        return (t(a), t(b), t(cc), alpha, beta), {}
    return make


def cases():
    eye3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    return [
        Case("fixed_2x2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [1.5, 2.0]],
                                         [[1.0, 0.0], [0.0, 1.0]], 2.0, 0.5)),
        Case("fixed_identity", "edge", _fixed(eye3, eye3, eye3, 1.0, 1.0)),
        Case("fixed_alpha0p5_beta2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]],
                                                    [[0.5, -1.0], [1.5, 2.0]],
                                                    [[1.0, 0.0], [0.0, 1.0]], 0.5, 2.0)),
        Case("empty_m", "edge", _make("normal", 5, 0, 0.5, 1.0)),
        Case("normal_f32", "small", _make("normal", 32, 64, 1.0, 0.5), dist="normal"),
        Case("uniform_f32", "small", _make("uniform", 64, 32, 0.7, -0.5), dist="uniform"),
        Case("outliers_f32", "small", _make("outliers", 45, 77, 0.1, 0.5), dist="outliers"),
        Case("normal_f16", "small", _make("normal", 48, 80, 0.125, 0.5, dtype=F16),
             dist="normal"),
        Case("outliers_bf16", "small", _make("outliers", 40, 33, 0.2, 1.0, dtype=BF16),
             dist="outliers"),
        Case("perf_f16_4096", "full", _make("normal", 4096, 4096, 1 / 64, 0.5, dtype=F16),
             dist="normal"),
        Case("perf_bf16_8192", "full", _make("uniform", 8192, 8192, 1 / 64, 0.5, dtype=BF16),
             dist="uniform"),
        Case("perf_bf16_4096x16384", "full", _make("normal", 4096, 16384, 1 / 128, 0.5,
                                                   dtype=BF16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", 4096, 4096, 1 / 64, 0.5), dist="normal"),
    ]


def cost(A, B, C, alpha, beta):
    n, m = A.shape
    elems = A.numel() + B.numel() + C.numel() + n * n
    return {"flops": 2 * n * n * m + 2 * n ** 3 + 6 * n * n, "bytes": elems * A.element_size()}
