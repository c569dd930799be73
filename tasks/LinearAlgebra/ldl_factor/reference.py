import torch

from kbx_worker.casegen import Case


def ldl_factor(A, hermitian=False, out=None):
    LD, pivots = torch.linalg.ldl_factor(A, hermitian=hermitian)
    if out is not None:
        out[0].copy_(LD)
        out[1].copy_(pivots)
        return out[0], out[1]
    return LD, pivots


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _sym_dominant(c, dist, batch, n):
    """Symmetric (*batch, n, n), generally indefinite: off-diagonal entries from dist, diagonal of
    random sign with magnitude 2 * (off-diagonal absolute column sum) + mean, scaled by 1/n.
    Bunch-Kaufman pivoting then takes every 1x1 pivot in place (no interchanges)."""
    g = torch.triu(_draw(c, dist, *batch, n, n), 1)
    g = g + g.mT
    colsum = g.abs().sum(-2)
    mag = 2.0 * colsum + c.uniform(*batch, n, low=0.5, high=1.5) * (colsum.mean(-1, keepdim=True) + 1.0)
    sign = torch.where(c.bernoulli(*batch, n), 1.0, -1.0)
    return (g + torch.diag_embed(sign * mag)) / n


def _make(dist, batch, n, hermitian=False, out=False):
    def make(c):
        kw = {"hermitian": True} if hermitian else {}
        if out:
            kw["out"] = (torch.zeros(*batch, n, n, device=c.device),
                         torch.zeros(*batch, n, dtype=torch.int32, device=c.device))
        return (_sym_dominant(c, dist, batch, n),), kw
    return make


def _fixed(c):
    a = torch.tensor([[[4.0, 1.0, 0.5], [1.0, 3.0, -1.0], [0.5, -1.0, 5.0]],
                      [[-4.0, 1.0, 0.0], [1.0, -3.0, 1.0], [0.0, 1.0, 2.0]],
                      [[2.0, 0.5, 0.0], [0.5, 2.0, 0.5], [0.0, 0.5, 2.0]]], device=c.device)
    return (a,), {}


def cases():
    return [
        Case("fixed_3x3", "edge", _fixed),
        Case("one_by_one", "edge", lambda c: ((c.uniform(6, 1, 1, low=-2.0, high=2.0),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 3, 3, device=c.device),), {})),
        Case("normal_b6_n20", "small", _make("normal", (6,), 20), dist="normal"),
        Case("uniform_b3_n33_hermitian", "small", _make("uniform", (3,), 33, hermitian=True),
             dist="uniform"),
        Case("outliers_b12_n10", "small", _make("outliers", (12,), 10), dist="outliers"),
        Case("normal_unbatched_n41", "small", _make("normal", (), 41), dist="normal"),
        Case("out_b2_n17", "small", _make("normal", (2,), 17, out=True), dist="normal"),
        # Full cases are sized so that one eager call takes at most about 0.1 s on the H200: each is
        # called about 20 times on each side when timed (docs/task-format.md, tiers)
        # (torch's batched LDL takes about 1.2 ms per matrix: 4096 of them took 5 s)
        Case("perf_b32_n32", "full", _make("normal", (32,), 32), dist="normal"),
        Case("perf_b16_n64", "full", _make("uniform", (16,), 64), dist="uniform"),
        Case("perf_n1024", "full", _make("normal", (), 1024), dist="normal"),
        Case("perf_n2048", "full", _make("normal", (), 2048), dist="normal"),
    ]


def cost(A, hermitian=False, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * n ** 3 // 3,
            "bytes": 2 * A.numel() * A.element_size() + batch * n * 4}
