import torch

from kbx_worker.casegen import Case


def det(A):
    return torch.linalg.det(A)


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, n):
    """(*batch, n, n) with rows shuffled per matrix from a column diagonally dominant matrix:
    diagonal magnitudes in [e^-0.5, e^0.5] with random signs, each column's off-diagonal absolute
    sum half its diagonal. Well-conditioned, |det| within exp(+-n/2) times a factor near 1, and
    partial pivoting picks a unique row at every step."""
    g = _draw(c, dist, *batch, n, n)
    eye = torch.eye(n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    perm = torch.argsort(c.uniform(*batch, n), dim=-1)
    return torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, n, n))


def _case(name, tier, make, dist=""):
    return Case(name, tier, lambda c: ((make(c),), {}), dist=dist)


def _fixed(c):
    return torch.tensor([[[4.0, 7.0, 0.0], [2.0, 6.0, 0.0], [0.0, 0.0, 1.0]],
                         [[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]],
                         [[1.0, 0.0, 2.0], [3.0, 0.0, 4.0], [5.0, 0.0, 6.0]],
                         [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                         [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], device=c.device)


def cases():
    return [
        _case("fixed_3x3", "edge", _fixed),
        _case("one_by_one", "edge", lambda c: c.randn(9, 1, 1)),
        _case("empty_batch", "edge", lambda c: torch.zeros(0, 5, 5, device=c.device)),
        _case("normal_b33_n13", "small", lambda c: _dominant(c, "normal", (33,), 13),
              dist="normal"),
        _case("uniform_b5_n40", "small", lambda c: _dominant(c, "uniform", (5,), 40),
              dist="uniform"),
        _case("outliers_b100_n9", "small", lambda c: _dominant(c, "outliers", (100,), 9),
              dist="outliers"),
        _case("normal_unbatched_n57", "small", lambda c: _dominant(c, "normal", (), 57),
              dist="normal"),
        _case("normal_b2x3_n4", "small", lambda c: _dominant(c, "normal", (2, 3), 4),
              dist="normal"),
        _case("perf_b4096_n32", "full", lambda c: _dominant(c, "normal", (4096,), 32),
              dist="normal"),
        _case("perf_b1024_n64", "full", lambda c: _dominant(c, "uniform", (1024,), 64),
              dist="uniform"),
        _case("perf_b8_n512", "full", lambda c: _dominant(c, "normal", (8,), 512),
              dist="normal"),
        _case("perf_n2048", "full", lambda c: _dominant(c, "normal", (), 2048), dist="normal"),
    ]


def cost(A):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * 2 * n ** 3 // 3, "bytes": (A.numel() + batch) * A.element_size()}
