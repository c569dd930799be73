import math

import torch

from kbx_worker.casegen import Case


def eig(A):
    eigenvalues, eigenvectors = torch.linalg.eig(A)
    # Canonical form (kbx): eigenvalues in ascending order of real part, each eigenvector scaled
    # to unit 2-norm and multiplied by the unit complex number that makes its entry sum real and
    # positive. The inputs have real, distinct, well-separated eigenvalues and eigenvectors whose
    # entry sums are far from zero, so this form is unique.
    order = torch.argsort(eigenvalues.real, dim=-1, stable=True)
    eigenvalues = torch.gather(eigenvalues, -1, order)
    eigenvectors = torch.gather(eigenvectors, -1, order.unsqueeze(-2).expand_as(eigenvectors))
    eigenvectors = eigenvectors / torch.linalg.vector_norm(eigenvectors, dim=-2, keepdim=True)
    s = eigenvectors.sum(dim=-2, keepdim=True)
    eigenvectors = eigenvectors * (s.conj() / s.abs())
    return eigenvalues, eigenvectors


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _orth_ones(c, batch, n):
    """Orthogonal (*batch, n, n) matrices Q with Q^T 1 = 1 (every column sums to 1): a random
    orthogonal block on the complement of the all-ones direction, conjugated by the Householder
    reflection that swaps e1 and 1/sqrt(n)."""
    dev = c.device
    q = torch.eye(n, device=dev).expand(*batch, n, n).clone()
    if n > 1:
        w, _ = torch.linalg.qr(c.randn(*batch, n - 1, n - 1))
        q[..., 1:, 1:] = w
        u = torch.full((n,), -1.0 / math.sqrt(n), device=dev)
        u[0] += 1.0
        h = torch.eye(n, device=dev) - (2.0 / (u @ u)) * torch.outer(u, u)
        q = h @ q @ h
    return q


def _nonsymmetric(c, dist, batch, n):
    """A = V diag(lam) V^-1 with V = Q (I + E): E strictly upper triangular, each column of zero
    sum and 2-norm 0.5 (shape drawn from dist), so every column of V sums to 1. Eigenvalues are a
    shuffled jittered grid on [-2, 2] with gaps of at least 2/n. Built as Q T Q^T with
    T = (I + E) diag(lam) (I + E)^-1 upper triangular."""
    dev = c.device
    upper = torch.ones(n, n, device=dev).triu(1).bool()
    e = torch.where(upper, _draw(c, dist, *batch, n, n), 0.0)
    count = torch.arange(n, device=dev, dtype=torch.float32).clamp_min(1.0)
    e = torch.where(upper, e - e.sum(-2, keepdim=True) / count, 0.0)
    norm = torch.linalg.vector_norm(e, dim=-2, keepdim=True)
    e = torch.where(norm > 1e-6, e * (0.5 / norm.clamp_min(1e-6)), 0.0)
    m = e + torch.eye(n, device=dev)
    grid = torch.arange(n, device=dev, dtype=torch.float32) + 0.5 * c.uniform(*batch, n)
    lam = torch.gather(grid * (4.0 / n) - 2.0, -1, torch.argsort(c.uniform(*batch, n), dim=-1))
    t = torch.linalg.solve_triangular(m, m * lam.unsqueeze(-2), upper=True, left=False,
                                      unitriangular=True)
    q = _orth_ones(c, batch, n)
    return q @ t @ q.mT


def _case(name, tier, make, dist=""):
    return Case(name, tier, lambda c: ((make(c),), {}), dist=dist)


def _fixed3(c):
    return torch.tensor([[[-2.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 4.0]],
                         [[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]],
                         [[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.0, 1.0, 5.0]]], device=c.device)


def cases():
    return [
        _case("fixed_3x3", "edge", _fixed3),
        _case("fixed_2x2", "edge",
              lambda c: torch.tensor([[1.0, 2.0], [0.0, 3.0]], device=c.device)),
        _case("one_by_one", "edge", lambda c: c.randn(7, 1, 1)),
        _case("normal_b16_n12", "small", lambda c: _nonsymmetric(c, "normal", (16,), 12),
              dist="normal"),
        _case("uniform_b4_n30", "small", lambda c: _nonsymmetric(c, "uniform", (4,), 30),
              dist="uniform"),
        _case("outliers_b8_n20", "small", lambda c: _nonsymmetric(c, "outliers", (8,), 20),
              dist="outliers"),
        _case("normal_unbatched_n25", "small", lambda c: _nonsymmetric(c, "normal", (), 25),
              dist="normal"),
        _case("normal_b50_n2", "small", lambda c: _nonsymmetric(c, "normal", (50,), 2),
              dist="normal"),
        # torch.linalg.eig runs its QR iterations on the host even for CUDA tensors, so the
        # performance shapes stay moderate (at most about 0.1 s per eager call on the H200: a batch of 512
        # of 32x32 took 2.4 s, and each timed case calls it about 20 times on both sides)
        _case("perf_b16_n32", "full", lambda c: _nonsymmetric(c, "normal", (16,), 32),
              dist="normal"),
        _case("perf_b8_n64", "full", lambda c: _nonsymmetric(c, "uniform", (8,), 64),
              dist="uniform"),
        _case("perf_b2_n256", "full", lambda c: _nonsymmetric(c, "normal", (2,), 256),
              dist="normal"),
        _case("perf_n512", "full", lambda c: _nonsymmetric(c, "normal", (), 512), dist="normal"),
    ]


def cost(A):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    # Hessenberg reduction, shifted QR iterations and eigenvector back-substitution: ~25 n^3.
    return {"flops": batch * 25 * n ** 3,
            "bytes": A.numel() * 4 + batch * (n + n * n) * 8}
