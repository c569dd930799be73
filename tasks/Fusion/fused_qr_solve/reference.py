import torch

from kbx_worker.casegen import Case


def fused_qr_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    Q, R = torch.linalg.qr(A)
    Qt_b = torch.matmul(Q.T, b)
    return torch.linalg.solve(R, Qt_b)


def _entries(c, dist, shape):
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    return c.randn(*shape)


def _dominant(c, dist, n):
    """Square, strictly diagonally dominant by rows and columns: well conditioned."""
    a = _entries(c, dist, (n, n))
    a.fill_diagonal_(0.0)
    bound = torch.maximum(a.abs().sum(dim=0), a.abs().sum(dim=1))
    sign = torch.where(c.bernoulli(n, p=0.5), 1.0, -1.0)
    return a + torch.diag(sign * (bound * 1.2 + 1.0))


def _tall(c, dist, m, n):
    """m >= 2n with independent entries: full column rank, condition number about
    (sqrt(m) + sqrt(n)) / (sqrt(m) - sqrt(n)) <= 6 (outlier entries add a few large rows)."""
    return _entries(c, dist, (m, n))


def _make(m, n, k=None, dist="normal"):
    """A (m, n) with m == n (diagonally dominant) or m >= 2n (tall); b (m,) or (m, k)."""
    def make(c):
        a = _dominant(c, dist, n) if m == n else _tall(c, dist, m, n)
        b = c.randn(m) if k is None else c.randn(m, k)
        return (a, b), {}
    return make


def cases():
    return [
        Case("one_by_one", "edge", _make(1, 1)),
        Case("column_vector_a", "edge", _make(9, 1, 2)),
        Case("orthogonal_columns", "edge",
             lambda c: ((torch.eye(8, 3, device=c.device) * 2.0, c.randn(8, 4)), {})),
        Case("consistent_system", "edge", lambda c: (lambda a, x: ((a, a @ x), {}))(
            _tall(c, "normal", 24, 6), c.randn(6, 2))),
        Case("normal_square_vector", "small", _make(97, 97), dist="normal"),
        Case("normal_tall_multi_rhs", "small", _make(120, 48, 9), dist="normal"),
        Case("uniform_tall_vector", "small", _make(100, 33, dist="uniform"), dist="uniform"),
        Case("uniform_square_multi_rhs", "small", _make(64, 64, 5, dist="uniform"), dist="uniform"),
        Case("outliers_tall", "small", _make(128, 40, 3, dist="outliers"), dist="outliers"),
        Case("outliers_square", "small", _make(50, 50, dist="outliers"), dist="outliers"),
        Case("perf_tall_8192x2048_64rhs", "full", _make(8192, 2048, 64), dist="normal"),
        Case("perf_tall_16384x1024_vector", "full", _make(16384, 1024), dist="normal"),
        Case("perf_square_4096_128rhs", "full", _make(4096, 4096, 128, dist="uniform"),
             dist="uniform"),
    ]


def cost(A, b):
    m, n = A.shape
    k = 1 if b.dim() == 1 else b.shape[1]
    flops = 2 * m * n * n - 2 * n ** 3 // 3 + 4 * m * n * k + n * n * k
    return {"flops": flops, "bytes": (A.numel() + b.numel() + n * k) * A.element_size()}
