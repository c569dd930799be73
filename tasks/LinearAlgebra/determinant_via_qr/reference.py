import torch

from kbx_worker.casegen import Case


def determinant_via_qr(A, *, mode='reduced', out=None):
    Q, R = torch.linalg.qr(A, mode=mode)
    det_Q = torch.det(Q)
    prod_diag_R = torch.prod(torch.diagonal(R, dim1=-2, dim2=-1), dim=-1)
    determinant = det_Q * prod_diag_R
    if out is not None:
        out.copy_(determinant)
        return out
    return determinant


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, n):
    """(*batch, n, n): a column diagonally dominant matrix (diagonal magnitudes in [e^-0.5, e^0.5],
    random signs, off-diagonal absolute column sums half the diagonal) with its rows shuffled.
    Well-conditioned, determinant of moderate magnitude and either sign."""
    g = _draw(c, dist, *batch, n, n)
    eye = torch.eye(n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    perm = torch.argsort(c.uniform(*batch, n), dim=-1)
    return torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, n, n))


def _make(dist, batch, n, mode=None, out=False):
    def make(c):
        kw = {} if mode is None else {"mode": mode}
        if out:
            kw["out"] = torch.zeros(*batch, device=c.device)
        return (_dominant(c, dist, batch, n),), kw
    return make


def _fixed(mode):
    def make(c):
        a = torch.tensor([[[1.0, 2.0, 0.0], [3.0, 4.0, 0.0], [0.0, 0.0, 1.0]],
                          [[2.0, 0.0, 1.0], [1.0, 3.0, 2.0], [4.0, 1.0, 3.0]],
                          [[1.0, 0.0, 2.0], [3.0, 0.0, 4.0], [5.0, 0.0, 6.0]],
                          [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]], device=c.device)
        return (a,), {"mode": mode}
    return make


def cases():
    return [
        Case("fixed_3x3_reduced", "edge", _fixed("reduced")),
        Case("fixed_3x3_complete", "edge", _fixed("complete")),
        Case("one_by_one", "edge", lambda c: ((c.randn(9, 1, 1),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 4, 4, device=c.device),), {})),
        Case("normal_b33_n13", "small", _make("normal", (33,), 13), dist="normal"),
        Case("uniform_b5_n40_complete", "small", _make("uniform", (5,), 40, mode="complete"),
             dist="uniform"),
        Case("outliers_b100_n9", "small", _make("outliers", (100,), 9), dist="outliers"),
        Case("normal_unbatched_n57", "small", _make("normal", (), 57), dist="normal"),
        Case("out_b6_n21", "small", _make("normal", (6,), 21, out=True), dist="normal"),
        # a batch of 4096 took 0.87 s per eager call on the H200 (batched QR of small matrices)
        Case("perf_b512_n32", "full", _make("normal", (512,), 32), dist="normal"),
        Case("perf_b256_n64_complete", "full", _make("uniform", (256,), 64, mode="complete"),
             dist="uniform"),
        Case("perf_b8_n512", "full", _make("normal", (8,), 512), dist="normal"),
        Case("perf_n2048", "full", _make("normal", (), 2048), dist="normal"),
    ]


def cost(A, *, mode="reduced", out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * 4 * n ** 3 // 3, "bytes": (A.numel() + batch) * A.element_size()}
