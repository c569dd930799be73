import torch

from kbx_worker.casegen import Case


def fused_lu_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    P, L, U = torch.linalg.lu(A)
    return torch.linalg.solve(L @ U, b)


def _offdiag(c, dist, shape):
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    return c.randn(*shape)


def _dominant(c, dist, batch, n):
    """Strictly column diagonally dominant matrices: |a_jj| exceeds the sum of the other |a_ij| in
    its column by at least 1, so LU with partial pivoting swaps no rows (P = I) and
    L @ U = A: the result is the unique solution of A x = b, and A is well conditioned."""
    a = _offdiag(c, dist, (*batch, n, n))
    eye = torch.eye(n, device=c.device, dtype=torch.bool)
    a = a.masked_fill(eye, 0.0)
    col = a.abs().sum(dim=-2)  # per column
    sign = torch.where(c.bernoulli(*batch, n, p=0.5), 1.0, -1.0)
    diag = sign * (col * c.uniform(*batch, n, low=1.05, high=2.0) + 1.0)
    return a + torch.diag_embed(diag)


def _make(batch, n, k=None, dist="normal"):
    """A (*batch, n, n); b (*batch, n) when k is None, else (*batch, n, k)."""
    def make(c):
        a = _dominant(c, dist, batch, n)
        b = c.randn(*batch, n) if k is None else c.randn(*batch, n, k)
        return (a, b), {}
    return make


def cases():
    return [
        Case("one_by_one", "edge", _make((), 1)),
        Case("two_by_two", "edge",
             lambda c: ((torch.tensor([[3.0, 1.0], [1.0, 2.0]], device=c.device),
                         torch.tensor([9.0, 8.0], device=c.device)), {})),
        Case("identity_multi_rhs", "edge",
             lambda c: ((torch.eye(7, device=c.device), c.randn(7, 3)), {})),
        Case("zero_rhs", "edge",
             lambda c: ((_dominant(c, "normal", (), 9), torch.zeros(9, 2, device=c.device)), {})),
        Case("normal_vector", "small", _make((), 97), dist="normal"),
        Case("normal_multi_rhs", "small", _make((), 64, 17), dist="normal"),
        Case("uniform_batched_vectors", "small", _make((5,), 33), dist="uniform"),
        Case("uniform_batched_multi_rhs", "small", _make((3, 2), 21, 5, dist="uniform"),
             dist="uniform"),
        Case("outliers_vector", "small", _make((), 120, dist="outliers"), dist="outliers"),
        Case("outliers_batched", "small", _make((4,), 50, 3, dist="outliers"), dist="outliers"),
        Case("perf_4096_vector", "full", _make((), 4096), dist="normal"),
        Case("perf_8192_256rhs", "full", _make((), 8192, 256), dist="normal"),
        Case("perf_batched_512x64", "full", _make((512,), 64, 16, dist="uniform"), dist="uniform"),
        Case("perf_batched_64x512", "full", _make((64,), 512, 1), dist="normal"),
    ]


def cost(A, b):
    n = A.shape[-1]
    batch = A.numel() // max(1, n * n)
    k = 1 if b.dim() == A.dim() - 1 else b.shape[-1]
    size = A.element_size()
    flops = batch * (2 * n ** 3 // 3 + 2 * n * n * k)
    return {"flops": flops, "bytes": (A.numel() + 2 * b.numel()) * size}
