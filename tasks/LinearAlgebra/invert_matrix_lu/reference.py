import torch

from kbx_worker.casegen import Case


def invert_matrix_lu(A, *, pivot=True, out=None):
    # A = P L U, so A^-1 = U^-1 L^-1 P^T. KernelBenchX multiplies by P instead of P^T, which is
    # only right when the permutation is its own inverse; kbx uses P^T (see compat.note).
    # PyTorch's CPU backend has no LU without pivoting, so the pivoted factorization is used for
    # both settings; the inverse does not depend on it, and the pivot=False cases use matrices on
    # which partial pivoting makes no row interchange.
    P, L, U = torch.linalg.lu(A)
    n = A.size(-1)
    P_eye = P.mT @ torch.eye(n, device=A.device, dtype=A.dtype).expand_as(A)
    Y = torch.linalg.solve(L, P_eye)
    A_inv = torch.linalg.solve(U, Y)
    if out is not None:
        out.copy_(A_inv)
        return out
    return A_inv


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
    random signs, off-diagonal absolute column sums half the diagonal; condition number below
    about 5), rows shuffled per matrix when permute is set."""
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
        kw = {} if pivot else {"pivot": False}
        if out:
            kw["out"] = torch.zeros(*batch, n, n, device=c.device)
        return (_dominant(c, dist, batch, n, permute=pivot),), kw
    return make


def _fixed(pivot):
    def make(c):
        # the first matrix needs a 3-cycle of rows (a permutation that is not its own inverse)
        a = torch.tensor([[[0.0, 6.0, -1.0], [-3.0, 1.0, 4.0], [7.0, 2.0, 1.0]],
                          [[7.0, 2.0, 1.0], [0.0, 6.0, -1.0], [-3.0, 1.0, 4.0]],
                          [[6.0, 3.0, 0.0], [4.0, 3.0, 0.0], [0.0, 0.0, 2.0]]], device=c.device)
        if not pivot:
            a = a[1:]
        return (a,), ({} if pivot else {"pivot": False})
    return make


def cases():
    return [
        Case("fixed_3x3", "edge", _fixed(True)),
        Case("fixed_3x3_nopivot", "edge", _fixed(False)),
        Case("one_by_one", "edge", lambda c: ((c.uniform(9, 1, 1, low=0.5, high=2.0),), {})),
        Case("empty_batch", "edge", lambda c: ((torch.zeros(0, 4, 4, device=c.device),), {})),
        Case("normal_b20_n13", "small", _make("normal", (20,), 13), dist="normal"),
        Case("uniform_b5_n40_nopivot", "small", _make("uniform", (5,), 40, pivot=False),
             dist="uniform"),
        Case("outliers_b64_n9", "small", _make("outliers", (64,), 9), dist="outliers"),
        Case("normal_unbatched_n57", "small", _make("normal", (), 57), dist="normal"),
        Case("out_b3_n24", "small", _make("normal", (3,), 24, out=True), dist="normal"),
        Case("perf_b4096_n32", "full", _make("normal", (4096,), 32), dist="normal"),
        Case("perf_b1024_n64_nopivot", "full", _make("uniform", (1024,), 64, pivot=False),
             dist="uniform"),
        Case("perf_n1024", "full", _make("normal", (), 1024), dist="normal"),
        Case("perf_n2048", "full", _make("normal", (), 2048), dist="normal"),
    ]


def cost(A, *, pivot=True, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": batch * 2 * n ** 3, "bytes": 2 * A.numel() * A.element_size()}
