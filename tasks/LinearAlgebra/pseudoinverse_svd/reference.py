import torch

from kbx_worker.casegen import Case


def pseudoinverse_svd(A, full_matrices=True, rcond=1e-15, out=None):
    U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
    # singular values at or below rcond * max(S) are treated as zero
    cutoff = rcond * S.max(dim=-1, keepdim=True).values
    S_inv = torch.where(S > cutoff, 1 / S, torch.zeros_like(S))
    A_pinv = Vh.transpose(-2, -1).conj() @ torch.diag_embed(S_inv) @ U.transpose(-2, -1).conj()
    if out is not None:
        out.copy_(A_pinv)
        return out
    return A_pinv


def _orth(c, batch, n):
    q, _ = torch.linalg.qr(c.randn(*batch, n, n))
    return q


def _spectrum(c, batch, m, n, sigma):
    """U diag(sigma) V^T with random orthogonal U (m x m) and V (n x n); sigma: (*batch, min(m,n))."""
    k = min(m, n)
    u = _orth(c, batch, m)[..., :k]
    v = _orth(c, batch, n)[..., :k]
    return (u * sigma.unsqueeze(-2)) @ v.mT


def _well(c, batch, m, n):
    """Prescribed singular values spread over [0.5, 2] (condition number at most 4)."""
    k = min(m, n)
    sigma = 0.5 * 4.0 ** c.uniform(*batch, k)
    return _spectrum(c, batch, m, n, sigma)


def _rank_cut(c, batch, m, n):
    """Half the singular values in [0.5, 2], the other half about 1e-6 of those: with rcond=1e-3
    the small ones fall far below the cutoff (in float32 and float64 alike)."""
    k = min(m, n)
    sigma = 0.5 * 4.0 ** c.uniform(*batch, k)
    small = torch.arange(k, device=c.device) >= (k + 1) // 2
    sigma = torch.where(small, sigma * 1e-6, sigma)
    return _spectrum(c, batch, m, n, sigma)


def _aspect(c, dist, batch, m, n):
    """Plain random matrices with aspect ratio >= 2 (condition number about 6 or less)."""
    if dist == "normal":
        return c.randn(*batch, m, n)
    return c.uniform(*batch, m, n, low=-1.0, high=1.0)


def cases():
    dev = lambda c: c.device  # noqa: E731
    return [
        Case("zero_matrix", "edge",
             lambda c: ((torch.zeros(3, 3, device=dev(c)),), {})),
        Case("fixed_2x2", "edge",
             lambda c: ((torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev(c)),), {})),
        Case("rank_deficient_rcond", "edge",
             lambda c: ((torch.tensor([[1.0, 2.0], [2.0, 4.0]], device=dev(c)),),
                        {"rcond": 1e-3})),
        Case("diag_rcond", "edge",
             lambda c: ((torch.diag(torch.tensor([2.0, -0.5, 1e-7], device=dev(c))),),
                        {"rcond": 1e-3})),
        Case("normal_m40_n20_reduced", "small",
             lambda c: ((_aspect(c, "normal", (), 40, 20),), {"full_matrices": False}),
             dist="normal"),
        Case("uniform_b3_m16_n36_reduced", "small",
             lambda c: ((_aspect(c, "uniform", (3,), 16, 36),), {"full_matrices": False}),
             dist="uniform"),
        Case("spectrum_b4_n24", "small", lambda c: ((_well(c, (4,), 24, 24),), {}),
             dist="spectrum"),
        Case("rank_cut_b2_m30_n20", "small",
             lambda c: ((_rank_cut(c, (2,), 30, 20),), {"full_matrices": False, "rcond": 1e-3}),
             dist="rank_cut"),
        Case("out_n28", "small",
             lambda c: ((_well(c, (), 28, 28),), {"out": torch.zeros(28, 28, device=dev(c))}),
             dist="spectrum"),
        Case("perf_b1024_n32", "full", lambda c: ((_well(c, (1024,), 32, 32),), {}),
             dist="spectrum"),
        Case("perf_b32_m128_n64_reduced", "full",
             lambda c: ((_aspect(c, "normal", (32,), 128, 64),), {"full_matrices": False}),
             dist="normal"),
        Case("perf_n1024", "full", lambda c: ((_well(c, (), 1024, 1024),), {}), dist="spectrum"),
        Case("perf_m2048_n1024_reduced", "full",
             lambda c: ((_aspect(c, "uniform", (), 2048, 1024),), {"full_matrices": False}),
             dist="uniform"),
    ]


def cost(A, full_matrices=True, rcond=1e-15, out=None):
    m, n = A.shape[-2], A.shape[-1]
    batch = A.numel() // max(m * n, 1)
    big, small = max(m, n), min(m, n)
    flops = batch * (14 * big * small * small + 8 * small ** 3 + 2 * m * n * small)
    return {"flops": flops, "bytes": 2 * A.numel() * A.element_size()}
