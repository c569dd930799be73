import torch

from kbx_worker.casegen import Case


def lu(A, pivot=True, out=None):
    # PyTorch's CPU backend has no LU without pivoting, so the pivoted factorization is computed
    # for both settings. The pivot=False cases use matrices on which partial pivoting makes no row
    # interchange (P = I), so L and U are those of elimination without pivoting; P is then
    # returned empty, as torch.linalg.lu(A, pivot=False) does.
    P, L, U = torch.linalg.lu(A)
    if not pivot:
        P = A.new_empty(0)
    if out is not None:
        for dst, src in zip(out, (P, L, U)):
            dst.copy_(src)
        return tuple(out)
    return P, L, U


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, m, n, permute):
    """(*batch, m, n) matrices whose first min(m, n) columns are column diagonally dominant
    (diagonal magnitudes in [e^-0.5, e^0.5], random signs, off-diagonal absolute column sum half
    the diagonal). Partial pivoting then always picks the row holding the diagonal entry, with a
    margin of 2x, so P is unique; with permute (used only for m <= n) the rows are shuffled."""
    g = _draw(c, dist, *batch, m, n)
    eye = torch.eye(m, n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    if permute:
        perm = torch.argsort(c.uniform(*batch, m), dim=-1)
        a = torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, m, n))
    return a


def _make(dist, batch, m, n, pivot=True, permute=None, out=False):
    def make(c):
        shuffle = pivot if permute is None else permute
        a = _dominant(c, dist, batch, m, n, permute=shuffle)
        kw = {} if pivot else {"pivot": False}
        if out:
            k = min(m, n)
            kw["out"] = (torch.zeros(*batch, m, m, device=c.device),
                         torch.zeros(*batch, m, k, device=c.device),
                         torch.zeros(*batch, k, n, device=c.device))
        return (a,), kw
    return make


def _fixed(pivot):
    def make(c):
        if pivot:
            a = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[2.0, 1.0], [-5.0, 3.0]],
                              [[4.0, 1.0], [2.0, 6.0]]], device=c.device)
        else:
            a = torch.tensor([[[6.0, 3.0, 1.0], [4.0, 3.0, 2.0]],
                              [[-5.0, 1.0, 0.0], [2.0, 4.0, -1.0]]], device=c.device)
        return (a,), ({} if pivot else {"pivot": False})
    return make


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed(True)),
        Case("fixed_2x3_nopivot", "edge", _fixed(False)),
        Case("one_by_one", "edge", lambda c: ((c.randn(5, 1, 1),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 4, 4, device=c.device),), {})),
        Case("normal_b9_n17", "small", _make("normal", (9,), 17, 17), dist="normal"),
        Case("uniform_b3_m12_n20", "small", _make("uniform", (3,), 12, 20), dist="uniform"),
        Case("normal_b5_m30_n18_tall", "small", _make("normal", (5,), 30, 18, permute=False),
             dist="normal"),
        Case("outliers_b16_n10", "small", _make("outliers", (16,), 10, 10), dist="outliers"),
        Case("normal_b4_m8_n12_nopivot", "small", _make("normal", (4,), 8, 12, pivot=False),
             dist="normal"),
        Case("uniform_b3_m25_n9_nopivot", "small", _make("uniform", (3,), 25, 9, pivot=False),
             dist="uniform"),
        Case("out_b2_n16", "small", _make("normal", (2,), 16, 16, out=True), dist="normal"),
        Case("perf_b4096_n32", "full", _make("normal", (4096,), 32, 32), dist="normal"),
        Case("perf_b1024_n64", "full", _make("uniform", (1024,), 64, 64), dist="uniform"),
        Case("perf_n1024", "full", _make("normal", (), 1024, 1024), dist="normal"),
        Case("perf_n2048_nopivot", "full", _make("normal", (), 2048, 2048, pivot=False),
             dist="normal"),
    ]


def cost(A, pivot=True, out=None):
    m, n = A.shape[-2], A.shape[-1]
    batch = A.numel() // max(m * n, 1)
    k = min(m, n)
    flops = batch * (max(m, n) * k * k - k ** 3 // 3)
    elems = A.numel() + batch * ((m * m if pivot else 0) + m * k + k * n)
    return {"flops": flops, "bytes": elems * A.element_size()}
