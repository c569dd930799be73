import torch

from kbx_worker.casegen import Case


def symmetric_matrix_vector_norm(A: torch.Tensor, x: torch.Tensor, alpha: float, beta: float,
                                 p: float = 2.0) -> torch.Tensor:
    y = alpha * torch.mv(A, x)
    y = y + beta * y
    return torch.norm(y, p)


def _sym(draw):
    """Exactly symmetric matrix from a draw (M + M^T, then cast)."""
    def make(c, n, dtype):
        m = draw(c, n)
        return ((m + m.T) * 0.5).to(dtype)
    return make


_normal = _sym(lambda c, n: c.randn(n, n))
_uniform = _sym(lambda c, n: c.uniform(n, n, low=-1, high=1))
_outliers = _sym(lambda c, n: c.outliers(n, n))


def _case(mat, vec, n, alpha, beta, p=None, dtype=torch.float32):
    def make(c):
        args = (mat(c, n, dtype), vec(c, n).to(dtype), alpha, beta)
        return (args + (p,) if p is not None else args), {}
    return make


def _fixed(a, x, alpha, beta, p=None):
    def make(c):
        args = (torch.tensor(a, device=c.device), torch.tensor(x, device=c.device), alpha, beta)
        return (args + (p,) if p is not None else args), {}
    return make


def cases():
    bf16 = torch.bfloat16
    randn = lambda c, n: c.randn(n)
    unif = lambda c, n: c.uniform(n, low=-1, high=1)
    outl = lambda c, n: c.outliers(n)
    a2 = [[2.0, 1.0], [1.0, 2.0]]
    a3 = [[4.0, 1.0, 2.0], [1.0, 3.0, 1.0], [2.0, 1.0, 3.0]]
    return [
        Case("fixed_2x2", "edge", _fixed(a2, [1.0, 1.0], 1.0, 1.0)),
        Case("fixed_2x2_scaled", "edge", _fixed(a2, [1.0, 1.0], 2.0, 0.5)),
        Case("fixed_2x2_p1", "edge", _fixed(a2, [1.0, 1.0], 1.0, 1.0, 1.0)),
        Case("fixed_3x3", "edge", _fixed(a3, [1.0, 2.0, 3.0], 1.5, 0.5)),
        Case("fixed_3x3_pinf_negative", "edge", _fixed(a3, [1.0, -2.0, 3.0], -0.75, 0.25, float("inf"))),
        Case("n1", "edge", _case(_normal, randn, 1, 1.0, 0.5)),
        Case("n0_empty", "edge", _case(_normal, randn, 0, 1.0, 0.5)),
        Case("normal_f32", "small", _case(_normal, randn, 128, 1.0, 0.5), dist="normal"),
        Case("normal_f32_p1", "small", _case(_normal, randn, 255, 1.0, 1.0, 1.0), dist="normal"),
        Case("uniform_f32_odd", "small", _case(_uniform, unif, 201, -0.3, 2.0), dist="uniform"),
        Case("uniform_f32_p3", "small", _case(_uniform, unif, 97, 0.7, -0.2, 3.0), dist="uniform"),
        Case("outliers_f32", "small", _case(_outliers, outl, 180, 1.0, 0.5), dist="outliers"),
        Case("outliers_f32_pinf", "small", _case(_outliers, outl, 77, 2.0, 0.0, float("inf")),
             dist="outliers"),
        Case("normal_bf16", "small", _case(_normal, randn, 199, 1.0, 0.5, dtype=bf16), dist="normal"),
        Case("perf_f32_8192", "full", _case(_normal, randn, 8192, 1.0, 0.5), dist="normal"),
        Case("perf_f32_16384", "full", _case(_normal, randn, 16384, 0.5, 1.0), dist="normal"),
        Case("perf_f32_12289_pinf", "full", _case(_uniform, unif, 12289, 1.0, 0.5, float("inf")),
             dist="uniform"),
        Case("perf_bf16_16384_p1", "full", _case(_normal, randn, 16384, 1.0, 0.5, 1.0, dtype=bf16),
             dist="normal"),
    ]


def cost(A, x, alpha, beta, p=2.0):
    n = x.numel()
    es = A.element_size()
    # A is symmetric: one triangle (n(n+1)/2 entries) is all a kernel has to read.
    return {"flops": 2 * n * n + 4 * n, "bytes": (n * (n + 1) // 2 + n + 1) * es}
