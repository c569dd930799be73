import torch

from kbx_worker.casegen import Case


def solve_and_add_scaled_vector(A: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                                alpha: float) -> torch.Tensor:
    x = torch.linalg.solve_triangular(A, b, upper=True)
    x += alpha * y
    return x


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _upper(c, dist, batch, n):
    """Upper triangular (*batch, n, n), zeros below the diagonal: diagonal magnitudes in
    [e^-0.5, e^0.5] with random signs, each row's off-diagonal absolute sum half its diagonal
    (condition number below about 5)."""
    g = torch.triu(_draw(c, dist, *batch, n, n), 1)
    mag = torch.exp(c.uniform(*batch, n, 1, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, n, 1), 1.0, -1.0)
    rowsum = g.abs().sum(-1, keepdim=True).clamp_min(1e-30)
    return g * (0.5 * mag / rowsum) + torch.diag_embed((sign * mag).squeeze(-1))


def _make(dist, batch, n, k, alpha, y_cols=1):
    def make(c):
        A = _upper(c, dist, batch, n)
        b = _draw(c, dist, *batch, n, k)
        y = _draw(c, dist, *batch, n, y_cols)
        return (A, b, y, alpha), {}
    return make


def _fixed(c):
    A = torch.tensor([[2.0, 1.0], [0.0, 3.0]], device=c.device)
    b = torch.tensor([[5.0, 6.0], [7.0, 8.0]], device=c.device)
    y = torch.tensor([[1.0], [2.0]], device=c.device)
    return (A, b, y, 0.5), {}


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed),
        Case("alpha_zero", "edge", _make("normal", (), 9, 4, 0.0)),
        Case("one_by_one", "edge",
             lambda c: ((c.uniform(1, 1, low=0.5, high=2.0), c.randn(1, 5), c.randn(1, 1), 2.0),
                        {})),
        Case("normal_n40_k9", "small", _make("normal", (), 40, 9, 0.1), dist="normal"),
        Case("uniform_n64_k64_y_full", "small", _make("uniform", (), 64, 64, 0.75, y_cols=64),
             dist="uniform"),
        Case("outliers_n33_k4", "small", _make("outliers", (), 33, 4, -2.5), dist="outliers"),
        Case("normal_b3_n20_k6", "small", _make("normal", (3,), 20, 6, 1.5), dist="normal"),
        Case("perf_n4096_k4096", "full", _make("normal", (), 4096, 4096, 0.1), dist="normal"),
        Case("perf_n2048_k2048", "full", _make("uniform", (), 2048, 2048, -0.5),
             dist="uniform"),
        Case("perf_b1024_n64_k64", "full", _make("normal", (1024,), 64, 64, 0.1), dist="normal"),
        Case("perf_n8192_k1", "full", _make("normal", (), 8192, 1, 0.1), dist="normal"),
    ]


def cost(A, b, y, alpha):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    k = b.shape[-1]
    flops = batch * (n * n * k + 2 * n * k)
    elems = batch * n * (n + 1) // 2 + 2 * b.numel() + y.numel()
    return {"flops": flops, "bytes": elems * A.element_size()}
