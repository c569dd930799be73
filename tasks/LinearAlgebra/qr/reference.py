import torch

from kbx_worker.casegen import Case


def qr(A, mode='reduced', out=None):
    Q, R = torch.linalg.qr(A, mode=mode)
    # Canonical form (kbx): the first min(m, n) diagonal entries of R are made non-negative by
    # flipping the sign of the matching rows of R and columns of Q. With that, Q and R are unique
    # for the full-rank inputs used (see task.toml for the modes that occur).
    k = min(A.shape[-2], A.shape[-1])
    d = torch.diagonal(R, dim1=-2, dim2=-1)[..., :k]
    s = torch.where(d < 0, -1.0, 1.0).to(R.dtype)
    rows = torch.ones(R.shape[:-1], dtype=R.dtype, device=R.device)
    rows[..., :k] = s
    R = R * rows.unsqueeze(-1)
    if mode != 'r':
        cols = torch.ones(Q.shape[:-2] + Q.shape[-1:], dtype=Q.dtype, device=Q.device)
        cols[..., :k] = s
        Q = Q * cols.unsqueeze(-2)
    # KernelBenchX accepts out but never writes to it; kbx honours it.
    if out is not None:
        out[0].copy_(Q)
        out[1].copy_(R)
        return out[0], out[1]
    return Q, R


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _dominant(c, dist, batch, m, n):
    """(*batch, m, n) with rows shuffled from a matrix whose first min(m, n) columns are column
    diagonally dominant (diagonal magnitudes in [e^-0.5, e^0.5], random signs, off-diagonal
    absolute column sums half the diagonal): full rank, |diag(R)| well away from zero."""
    g = _draw(c, dist, *batch, m, n)
    eye = torch.eye(m, n, dtype=torch.bool, device=c.device)
    g = g.masked_fill(eye, 0.0)
    mag = torch.exp(c.uniform(*batch, 1, n, low=-0.5, high=0.5))
    sign = torch.where(c.bernoulli(*batch, 1, n), 1.0, -1.0)
    colsum = g.abs().sum(-2, keepdim=True).clamp_min(1e-30)
    a = torch.where(eye, sign * mag, g * (0.5 * mag / colsum))
    perm = torch.argsort(c.uniform(*batch, m), dim=-1)
    return torch.gather(a, -2, perm.unsqueeze(-1).expand(*batch, m, n))


def _make(dist, batch, m, n, mode=None, out=False):
    def make(c):
        kw = {} if mode is None else {"mode": mode}
        if out:
            k = min(m, n)
            kw["out"] = (torch.zeros(*batch, m, k, device=c.device),
                         torch.zeros(*batch, k, n, device=c.device))
        return (_dominant(c, dist, batch, m, n),), kw
    return make


def _fixed(rows, mode):
    return lambda c: ((torch.tensor(rows, device=c.device),), {"mode": mode})


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], "reduced")),
        Case("fixed_3x2_reduced", "edge",
             _fixed([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "reduced")),
        Case("fixed_2x3_r", "edge", _fixed([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "r")),
        Case("fixed_2x3_complete", "edge", _fixed([[-1.0, 2.0, 3.0], [4.0, -5.0, 6.0]],
                                                  "complete")),
        Case("one_by_one", "edge", lambda c: ((c.randn(6, 1, 1),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 4, 3, device=c.device),), {})),
        Case("normal_b5_m40_n24", "small", _make("normal", (5,), 40, 24), dist="normal"),
        Case("uniform_b3_m20_n36_complete", "small",
             _make("uniform", (3,), 20, 36, mode="complete"), dist="uniform"),
        Case("outliers_b8_n16", "small", _make("outliers", (8,), 16, 16), dist="outliers"),
        Case("normal_b4_m50_n30_r", "small", _make("normal", (4,), 50, 30, mode="r"),
             dist="normal"),
        Case("normal_unbatched_n45_complete", "small",
             _make("normal", (), 45, 45, mode="complete"), dist="normal"),
        Case("out_b2_n25", "small", _make("normal", (2,), 25, 25, out=True), dist="normal"),
        # Full cases are sized so that one eager call takes at most about 0.1 s on the H200: each is
        # called about 20 times on each side when timed (docs/task-format.md, tiers)
        Case("perf_b256_n32", "full", _make("normal", (256,), 32, 32), dist="normal"),
        Case("perf_b256_n64", "full", _make("uniform", (256,), 64, 64), dist="uniform"),
        Case("perf_n1024", "full", _make("normal", (), 1024, 1024), dist="normal"),
        Case("perf_m2048_n1024", "full", _make("normal", (), 2048, 1024), dist="normal"),
    ]


def cost(A, mode="reduced", out=None):
    m, n = A.shape[-2], A.shape[-1]
    batch = A.numel() // max(m * n, 1)
    k = min(m, n)
    r_flops = 2 * max(m, n) * k * k - 2 * k ** 3 // 3
    flops = batch * (r_flops if mode == "r" else 2 * r_flops)
    q_elems = 0 if mode == "r" else (m * m if mode == "complete" else m * k)
    r_rows = m if mode == "complete" else k
    elems = A.numel() + batch * (q_elems + r_rows * n)
    return {"flops": flops, "bytes": elems * A.element_size()}
