import torch

from kbx_worker.casegen import Case


def fused_cholesky_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    L = torch.linalg.cholesky(A)
    y = torch.linalg.solve_triangular(L, b, upper=False)
    return torch.linalg.solve_triangular(L.mT, y, upper=True)


def _spd_gram(c, n, draw):
    """X X^T / n + I for a random X: eigenvalues in about [1, 5]."""
    x = draw(c, (n, n))
    a = x @ x.mT / n + torch.eye(n, device=c.device)
    return (a + a.mT) / 2


def _spd_spectrum(c, n):
    """Q diag(lambda) Q^T with lambda uniform in [1, 10] and Q a random orthogonal matrix."""
    q, _ = torch.linalg.qr(c.randn(n, n))
    lam = c.uniform(n, low=1.0, high=10.0)
    a = (q * lam) @ q.mT
    return (a + a.mT) / 2


def _diag_dominant(c, n):
    """Symmetric, small off-diagonal entries, diagonal in [n/4+1, n/4+2]: eigenvalues >= 1."""
    off = c.uniform(n, n, low=-0.5, high=0.5)
    off = (off + off.mT) / 2
    off.fill_diagonal_(0.0)
    return off + torch.diag(c.uniform(n, low=1.0, high=2.0) + n / 4)


def _make(build_a, n, k, draw_b):
    def make(c):
        return (build_a(c, n), draw_b(c, (n, k))), {}
    return make


def _gram(draw):
    return lambda c, n: _spd_gram(c, n, draw)


def _normal(c, shape):
    return c.randn(shape)


def _uniform(c, shape):
    return c.uniform(shape, low=-1.0, high=1.0)


def _outliers(c, shape):
    return c.outliers(shape)


def _fixed(c):
    a = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]], device=c.device)
    return (a, c.randn(3, 2)), {}


def cases():
    return [
        Case("one_by_one", "edge", lambda c: ((c.uniform(1, 1, low=1.0, high=4.0),
                                                c.randn(1, 1)), {})),
        Case("identity", "edge", lambda c: ((torch.eye(17, device=c.device), c.randn(17, 3)), {})),
        Case("diagonal", "edge", lambda c: ((torch.diag(c.uniform(9, low=0.5, high=4.0)),
                                             c.randn(9, 4)), {})),
        Case("fixed_3x3", "edge", _fixed),
        Case("no_rhs", "edge", _make(_diag_dominant, 8, 0, _normal)),
        Case("gram_normal", "small", _make(_gram(_normal), 64, 8, _normal), dist="normal"),
        Case("spectrum_normal_odd", "small", _make(_spd_spectrum, 97, 13, _normal), dist="spd"),
        Case("gram_uniform_one_rhs", "small", _make(_gram(_uniform), 127, 1, _uniform),
             dist="uniform"),
        Case("diag_dominant_uniform", "small", _make(_diag_dominant, 45, 45, _uniform),
             dist="uniform"),
        Case("spectrum_outliers_rhs", "small", _make(_spd_spectrum, 80, 31, _outliers),
             dist="outliers"),
        Case("perf_n4096_k1024", "full", _make(_spd_spectrum, 4096, 1024, _normal), dist="spd"),
        Case("perf_n8192_k256", "full", _make(_gram(_normal), 8192, 256, _normal),
             dist="normal"),
        Case("perf_n2048_k2048", "full", _make(_diag_dominant, 2048, 2048, _uniform),
             dist="uniform"),
    ]


def cost(A, b):
    n, k = A.shape[-1], b.shape[-1]
    return {"flops": n ** 3 // 3 + 2 * n * n * k,
            "bytes": (n * (n + 1) // 2 + 2 * n * k) * A.element_size()}
