import math

import torch

from kbx_worker.casegen import Case

RTOL = 1e-3  # singular values at or below RTOL * (largest singular value) are dropped


def fused_svd_reconstruct(A: torch.Tensor) -> torch.Tensor:
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    if S.numel() == 0:
        return U @ Vh
    kept = torch.where(S > RTOL * S[0], S, torch.zeros_like(S))
    return U @ torch.diag(kept) @ Vh


def _orthonormal(c, rows, cols):
    q, r = torch.linalg.qr(c.randn(rows, cols, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))  # a deterministic orthonormal basis


def _spectrum(c, kind, kept, dropped, scale):
    """kept values in [1e-2, 1] * scale (ten times above the cutoff at least), dropped values in
    [1e-6, 1e-4] * scale (ten times below it at least); the largest is exactly scale."""
    if kind == "uniform":
        s_keep = c.uniform(kept, low=1e-2, high=1.0, dtype=torch.float64)
    elif kind == "clustered":  # repeated values: U and V are not unique there, the product is
        s_keep = torch.tensor([1.0, 0.1, 0.02], dtype=torch.float64, device=c.device)
        s_keep = s_keep.repeat_interleave(math.ceil(kept / 3))[:kept]
    else:
        s_keep = torch.exp(c.uniform(kept, low=math.log(1e-2), high=0.0, dtype=torch.float64))
    s_drop = torch.exp(c.uniform(dropped, low=math.log(1e-6), high=math.log(1e-4),
                                 dtype=torch.float64))
    s = torch.cat([s_keep, s_drop]).sort(descending=True).values
    s[0] = 1.0
    return s * scale


def _make(m, n, kept, kind="normal", scale=3.0):
    """A = U diag(s) V^T with random orthonormal U (m x p), V (n x p), p = min(m, n), and a
    spectrum with a wide gap around the cutoff, built in float64 and rounded to float32."""
    def make(c):
        p = min(m, n)
        s = _spectrum(c, kind, kept, p - kept, scale)
        u = _orthonormal(c, m, p)
        v = _orthonormal(c, n, p)
        return (((u * s) @ v.T).to(torch.float32),), {}
    return make


def cases():
    return [
        Case("zero_matrix", "edge", lambda c: ((torch.zeros(5, 4, device=c.device),), {})),
        Case("one_by_one", "edge", lambda c: ((torch.tensor([[42.0]], device=c.device),), {})),
        Case("full_rank_kept", "edge", _make(12, 9, 9)),
        Case("rank_one_plus_tail", "edge", _make(10, 14, 1)),
        Case("normal_square", "small", _make(64, 64, 40), dist="normal"),
        Case("normal_tall", "small", _make(120, 48, 20), dist="normal"),
        Case("uniform_wide", "small", _make(40, 100, 25, kind="uniform"), dist="uniform"),
        Case("uniform_tall_odd", "small", _make(97, 61, 31, kind="uniform", scale=250.0),
             dist="uniform"),
        Case("clustered_square", "small", _make(80, 80, 45, kind="clustered"), dist="clustered"),
        Case("clustered_wide", "small", _make(33, 128, 20, kind="clustered", scale=0.01),
             dist="clustered"),
        # (no 3072x3072 case: 1.1 s per eager SVD on the H200, timed about 20 times per side)
        Case("perf_tall_8192x1024", "full", _make(8192, 1024, 512, kind="uniform"),
             dist="uniform"),
        Case("perf_wide_1024x8192", "full", _make(1024, 8192, 768, kind="clustered"),
             dist="clustered"),
        Case("perf_square_1536", "full", _make(1536, 1536, 1100), dist="normal"),
    ]


def cost(A):
    m, n = A.shape
    big, small = max(m, n), min(m, n)
    flops = 4 * big * small * small + 22 * small ** 3 + 2 * m * n * small
    return {"flops": flops, "bytes": 2 * A.numel() * A.element_size()}
