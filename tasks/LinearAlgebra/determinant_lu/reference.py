import torch

from kbx_worker.casegen import Case


def determinant_lu(A, *, pivot=True, out=None):
    # PyTorch's CPU backend has no LU without pivoting, so the pivoted factorization is used for
    # both settings of `pivot`. The determinant does not depend on it: for every input where the
    # unpivoted LU exists, prod(diag(U)) equals sign(P) * prod(diag(U_pivoted)). The pivot=False
    # cases use matrices on which partial pivoting makes no row interchange anyway.
    P, L, U = torch.linalg.lu(A)
    det_U = torch.prod(torch.diagonal(U, dim1=-2, dim2=-1), dim=-1)
    sign_P, _ = torch.linalg.slogdet(P)
    det = sign_P * det_U
    if out is not None:
        out.copy_(det)
        return out
    return det


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, n, permute):
    """(*batch, n, n) column diagonally dominant matrices (diagonal magnitudes in [e^-0.5, e^0.5],
    random signs, each column's off-diagonal absolute sum half its diagonal), rows shuffled per
    matrix when permute is set. Without the shuffle partial pivoting never swaps rows."""
    g = _draw(c, dist, *batch, n, n)
    eye = torch.eye(n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    if permute:
        perm = torch.argsort(c.uniform(*batch, n), dim=-1)
        a = torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, n, n))
    return a


def _make(dist, batch, n, pivot=True, out=False):
    def make(c):
        a = _dominant(c, dist, batch, n, permute=pivot)
        kw = {} if pivot else {"pivot": False}
        if out:
            kw["out"] = torch.zeros(*batch, device=c.device)
        return (a,), kw
    return make


def _fixed(pivot):
    def make(c):
        a = torch.tensor([[[3.0, 1.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]],
                          [[5.0, 2.0, 3.0], [0.0, 4.0, 1.0], [1.0, 1.0, 6.0]],
                          [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]], device=c.device)
        if pivot:
            # rows shuffled, plus a singular matrix (zero middle column: det is exactly 0)
            a = a[:, [2, 0, 1], :]
            z = torch.tensor([[[4.0, 0.0, 2.0], [3.0, 0.0, 4.0], [1.0, 0.0, 6.0]]], device=c.device)
            a = torch.cat([a, z])
        return (a,), ({} if pivot else {"pivot": False})
    return make


def cases():
    return [
        Case("fixed_3x3", "edge", _fixed(True)),
        Case("fixed_3x3_nopivot", "edge", _fixed(False)),
        Case("one_by_one", "edge", lambda c: ((c.randn(9, 1, 1),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 5, 5, device=c.device),), {})),
        Case("normal_b33_n13", "small", _make("normal", (33,), 13), dist="normal"),
        Case("uniform_b5_n40_nopivot", "small", _make("uniform", (5,), 40, pivot=False),
             dist="uniform"),
        Case("outliers_b100_n9", "small", _make("outliers", (100,), 9), dist="outliers"),
        Case("normal_unbatched_n57", "small", _make("normal", (), 57), dist="normal"),
        Case("out_b6_n21", "small", _make("normal", (6,), 21, out=True), dist="normal"),
        Case("perf_b4096_n32", "full", _make("normal", (4096,), 32), dist="normal"),
        Case("perf_b1024_n64_nopivot", "full", _make("uniform", (1024,), 64, pivot=False),
             dist="uniform"),
        Case("perf_b8_n512", "full", _make("normal", (8,), 512), dist="normal"),
        Case("perf_n2048", "full", _make("normal", (), 2048), dist="normal"),
    ]


def cost(A, *, pivot=True, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * 2 * n ** 3 // 3, "bytes": (A.numel() + batch) * A.element_size()}
