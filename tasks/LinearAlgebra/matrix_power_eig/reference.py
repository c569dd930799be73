import torch

from kbx_worker.casegen import Case


def matrix_power_eig(A: torch.Tensor, k: float, *, out: torch.Tensor = None) -> torch.Tensor:
    eigvals, eigvecs = torch.linalg.eigh(A)
    eigvals_power_k = torch.pow(eigvals, k)
    # KernelBenchX uses torch.diag, which only builds the diagonal matrix for a single matrix;
    # diag_embed gives the same result there and also works on batches.
    A_power_k = torch.matmul(eigvecs,
                             torch.matmul(torch.diag_embed(eigvals_power_k), eigvecs.transpose(-1, -2)))
    if out is not None:
        out.copy_(A_power_k)
        return out
    return A_power_k


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _spd(c, dist, batch, n):
    """Symmetric positive definite (*batch, n, n): X X^T / n + I, eigenvalues >= 1."""
    x = _draw(c, dist, *batch, n, n)
    a = x @ x.mT / n + torch.eye(n, device=c.device)
    return (a + a.mT) / 2


def _make(dist, batch, n, k, out=False):
    def make(c):
        kw = {"out": torch.zeros(*batch, n, n, device=c.device)} if out else {}
        return (_spd(c, dist, batch, n), k), kw
    return make


def cases():
    return [
        Case("diag_2x2_k2", "edge",
             lambda c: ((torch.tensor([[2.0, 0.0], [0.0, 3.0]], device=c.device), 2), {})),
        Case("identity_k0p5", "edge",
             lambda c: ((torch.eye(4, device=c.device).expand(3, 4, 4).contiguous(), 0.5), {})),
        Case("spd_k0", "edge", _make("normal", (3,), 6, 0.0)),
        Case("one_by_one_k-1", "edge",
             lambda c: ((c.uniform(5, 1, 1, low=0.5, high=3.0), -1.0), {})),
        Case("normal_b6_n20_k0p5", "small", _make("normal", (6,), 20, 0.5), dist="normal"),
        Case("uniform_b3_n35_k2", "small", _make("uniform", (3,), 35, 2.0), dist="uniform"),
        Case("outliers_b10_n12_k-1", "small", _make("outliers", (10,), 12, -1.0),
             dist="outliers"),
        Case("normal_unbatched_n40_k3", "small", _make("normal", (), 40, 3), dist="normal"),
        Case("out_b2_n25_k1p5", "small", _make("normal", (2,), 25, 1.5, out=True),
             dist="normal"),
        Case("perf_b4096_n32_k0p5", "full", _make("normal", (4096,), 32, 0.5), dist="normal"),
        Case("perf_b64_n64_k2", "full", _make("uniform", (64,), 64, 2.0), dist="uniform"),
        Case("perf_n1024_k0p5", "full", _make("normal", (), 1024, 0.5), dist="normal"),
        Case("perf_n2048_k-0p5", "full", _make("normal", (), 2048, -0.5), dist="normal"),
    ]


def cost(A, k, *, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    # symmetric eigendecomposition with vectors (~9 n^3) plus V diag(w^k) V^T (2 n^3)
    return {"flops": batch * 11 * n ** 3, "bytes": 2 * A.numel() * A.element_size()}
