import torch

from kbx_worker.casegen import Case


def solve(A, B):
    return torch.linalg.solve(A, B)


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, n):
    """(*batch, n, n): rows shuffled from a column diagonally dominant matrix (diagonal magnitudes
    in [e^-0.5, e^0.5], random signs, off-diagonal absolute column sums half the diagonal).
    Condition number below about 5."""
    g = _draw(c, dist, *batch, n, n)
    eye = torch.eye(n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    perm = torch.argsort(c.uniform(*batch, n), dim=-1)
    return torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, n, n))


def _make(dist, batch, n, k):
    """k=None: B is a vector per matrix, shape (*batch, n)."""
    def make(c):
        a = _dominant(c, dist, batch, n)
        b = _draw(c, dist, *batch, n) if k is None else _draw(c, dist, *batch, n, k)
        return (a, b), {}
    return make


def cases():
    return [
        Case("fixed_2x2_vector", "edge",
             lambda c: ((torch.tensor([[3.0, 1.0], [1.0, 2.0]], device=c.device),
                         torch.tensor([9.0, 8.0], device=c.device)), {})),
        Case("fixed_3x3_vector", "edge",
             lambda c: ((torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]],
                                      device=c.device),
                         torch.tensor([6.0, 4.0, 3.0], device=c.device)), {})),
        Case("one_by_one", "edge",
             lambda c: ((c.uniform(5, 1, 1, low=0.5, high=2.0), c.randn(5, 1, 3)), {})),
        Case("empty_batch", "edge",
             lambda c: ((torch.zeros(0, 3, 3, device=c.device),
                         torch.zeros(0, 3, 2, device=c.device)), {})),
        Case("normal_b7_n19_k3", "small", _make("normal", (7,), 19, 3), dist="normal"),
        Case("uniform_n31_vector", "small", _make("uniform", (), 31, None), dist="uniform"),
        Case("outliers_b20_n8_k8", "small", _make("outliers", (20,), 8, 8), dist="outliers"),
        Case("normal_b6_n16_vector", "small", _make("normal", (6,), 16, None), dist="normal"),
        Case("uniform_b2x3_n12_k5", "small", _make("uniform", (2, 3), 12, 5), dist="uniform"),
        Case("perf_b4096_n32_k1", "full", _make("normal", (4096,), 32, 1), dist="normal"),
        Case("perf_b1024_n64_k64", "full", _make("uniform", (1024,), 64, 64), dist="uniform"),
        Case("perf_n2048_k256", "full", _make("normal", (), 2048, 256), dist="normal"),
        Case("perf_n1024_k1024", "full", _make("normal", (), 1024, 1024), dist="normal"),
    ]


def cost(A, B):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    k = B.numel() // max(batch * n, 1)
    flops = batch * (2 * n ** 3 // 3 + 2 * n * n * k)
    return {"flops": flops, "bytes": (A.numel() + 2 * B.numel()) * A.element_size()}
