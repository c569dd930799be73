import torch

from kbx_worker.casegen import Case


def low_rank_svd_approximation(A, k, *, full_matrices=True, out=None):
    U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
    U_k = U[..., :k]
    S_k = S[..., :k]
    Vh_k = Vh[..., :k, :]
    A_k = U_k @ torch.diag_embed(S_k) @ Vh_k
    if out is not None:
        out.copy_(A_k)
        return out
    return A_k


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _low_rank(c, dist, batch, m, n, r, noise=0.01):
    """Rank-r signal X Y / sqrt(r) plus small noise: a wide gap between singular values r and r+1,
    so the best rank-r approximation is unique and well-conditioned."""
    x = _draw(c, dist, *batch, m, r)
    y = _draw(c, dist, *batch, r, n)
    return x @ y / r ** 0.5 + noise * c.randn(*batch, m, n)


def _make(dist, batch, m, n, k, full_matrices=None, out=False, rank=None):
    def make(c):
        a = _low_rank(c, dist, batch, m, n, k if rank is None else rank)
        kw = {} if full_matrices is None else {"full_matrices": full_matrices}
        if out:
            kw["out"] = torch.zeros(*batch, m, n, device=c.device)
        return (a, k), kw
    return make


def cases():
    return [
        Case("zero_matrix", "edge",
             lambda c: ((torch.zeros(2, 5, 4, device=c.device), 2), {})),
        Case("rank_one_k1", "edge",
             lambda c: ((torch.outer(c.randn(6), c.randn(3)), 1), {"full_matrices": False})),
        Case("k_equals_min", "edge", lambda c: ((c.randn(3, 7, 5), 5), {})),
        Case("one_by_one", "edge", lambda c: ((c.randn(4, 1, 1), 1), {})),
        Case("normal_m48_n40_k5", "small", _make("normal", (), 48, 40, 5), dist="normal"),
        Case("uniform_b4_m30_n50_k7_reduced", "small",
             _make("uniform", (4,), 30, 50, 7, full_matrices=False), dist="uniform"),
        Case("outliers_b8_m24_n24_k3", "small", _make("outliers", (8,), 24, 24, 3),
             dist="outliers"),
        Case("out_b2_m33_n20_k4", "small", _make("normal", (2,), 33, 20, 4, out=True),
             dist="normal"),
        Case("perf_b1024_n32_k8", "full", _make("normal", (1024,), 32, 32, 8), dist="normal"),
        # (one eager call at most about 0.1 s on the H200; 32 of these took 0.23 s)
        Case("perf_b8_m256_n128_k16_reduced", "full",
             _make("uniform", (8,), 256, 128, 16, full_matrices=False), dist="uniform"),
        Case("perf_n1024_k64", "full", _make("normal", (), 1024, 1024, 64), dist="normal"),
        Case("perf_m2048_n1024_k128_reduced", "full",
             _make("normal", (), 2048, 1024, 128, full_matrices=False), dist="normal"),
    ]


def cost(A, k, *, full_matrices=True, out=None):
    m, n = A.shape[-2], A.shape[-1]
    batch = A.numel() // max(m * n, 1)
    big, small = max(m, n), min(m, n)
    flops = batch * (14 * big * small * small + 8 * small ** 3 + 2 * m * n * k)
    return {"flops": flops, "bytes": 2 * A.numel() * A.element_size()}
