import torch

from kbx_worker.casegen import Case


def solve_symmetric_ldl(A, b, hermitian=False, out=None):
    # Solves A x = b through an LDL^T (Bunch-Kaufman) factorization of A. KernelBenchX's version
    # multiplies the packed factor by a diagonal built from the integer pivot indices and solves
    # with that product instead of A, and casts everything to float32; see compat.note.
    LD, pivots = torch.linalg.ldl_factor(A, hermitian=hermitian)
    vector = b.dim() == A.dim() - 1
    B = b.unsqueeze(-1) if vector else b
    x = torch.linalg.ldl_solve(LD, pivots, B, hermitian=hermitian)
    if vector:
        x = x.squeeze(-1)
    if out is not None:
        out.copy_(x)
        return out
    return x


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
    Well-conditioned (condition number below about 5)."""
    g = torch.triu(_draw(c, dist, *batch, n, n), 1)
    g = g + g.mT
    colsum = g.abs().sum(-2)
    mag = 2.0 * colsum + c.uniform(*batch, n, low=0.5, high=1.5) * (colsum.mean(-1, keepdim=True) + 1.0)
    sign = torch.where(c.bernoulli(*batch, n), 1.0, -1.0)
    return (g + torch.diag_embed(sign * mag)) / n


def _make(dist, batch, n, k, hermitian=False, out=False):
    """k=None: b is one vector per matrix, shape (*batch, n)."""
    def make(c):
        A = _sym_dominant(c, dist, batch, n)
        shape = (*batch, n) if k is None else (*batch, n, k)
        kw = {"hermitian": True} if hermitian else {}
        if out:
            kw["out"] = torch.zeros(*shape, device=c.device)
        return (A, _draw(c, dist, *shape)), kw
    return make


def _fixed(rows, rhs):
    return lambda c: ((torch.tensor(rows, device=c.device), torch.tensor(rhs, device=c.device)),
                      {})


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed([[4.0, 1.0], [1.0, 3.0]], [1.0, 2.0])),
        Case("fixed_3x3", "edge",
             _fixed([[6.0, 2.0, 1.0], [2.0, 5.0, 2.0], [1.0, 2.0, 4.0]], [1.0, 2.0, 3.0])),
        Case("fixed_indefinite", "edge", _fixed([[-4.0, 1.0], [1.0, -3.0]], [1.0, 2.0])),
        Case("one_by_one", "edge",
             lambda c: ((c.uniform(4, 1, 1, low=0.5, high=2.0), c.randn(4, 1)), {})),
        Case("normal_n30_vector", "small", _make("normal", (), 30, None), dist="normal"),
        Case("uniform_b4_n25_k3_hermitian", "small",
             _make("uniform", (4,), 25, 3, hermitian=True), dist="uniform"),
        Case("outliers_b10_n12_vector", "small", _make("outliers", (10,), 12, None),
             dist="outliers"),
        Case("out_n20_k2", "small", _make("normal", (), 20, 2, out=True), dist="normal"),
        # Full cases are sized so that one eager call takes at most about 0.1 s on the H200: each is
        # called about 20 times on each side when timed (docs/task-format.md, tiers)
        # (torch's batched LDL takes about 1.2 ms per matrix)
        Case("perf_b32_n32_vector", "full", _make("normal", (32,), 32, None),
             dist="normal"),
        Case("perf_b16_n64_k8", "full", _make("uniform", (16,), 64, 8), dist="uniform"),
        Case("perf_n1024_k64", "full", _make("normal", (), 1024, 64), dist="normal"),
        Case("perf_n2048_vector", "full", _make("normal", (), 2048, None), dist="normal"),
    ]


def cost(A, b, hermitian=False, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    k = b.numel() // max(batch * n, 1)
    flops = batch * (n ** 3 // 3 + 2 * n * n * k)
    return {"flops": flops, "bytes": (A.numel() + 2 * b.numel()) * A.element_size()}
