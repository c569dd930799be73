import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def tril_mm_and_scale(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    lower_tril_A = torch.tril(A)
    result = alpha * torch.mm(lower_tril_A, B)
    return beta * result


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype, scale=20.0 if dtype == F16 else 1000.0)
    raise ValueError(dist)


def _make(dist, n, p, alpha, beta, dtype=F32):
    return lambda c: ((_draw(c, dist, n, n, dtype=dtype), _draw(c, dist, n, p, dtype=dtype),
                       alpha, beta), {})


def _fixed(a, b, alpha, beta):
    def make(c):
        t = lambda v: torch.tensor(v, device=c.device)  # noqa: E731
        return (t(a), t(b), alpha, beta), {}
    return make


def _junk_upper(c):
    """Lower triangle random; strict upper triangle full of +-inf, NaN and 1e30, none of which may
    reach the result."""
    n = 9
    junk = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e30], device=c.device)
    upper = junk[c.randint(0, 4, n, n)]
    keep = torch.ones(n, n, device=c.device).tril().bool()
    return (torch.where(keep, c.randn(n, n), upper), c.randn(n, 4), 1.0, 1.0), {}


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]], 1.0, 1.0)),
        Case("fixed_scaled", "edge", _fixed([[1.0, 0.0], [3.0, 4.0]], [[2.0, 3.0], [4.0, 5.0]], 0.5, 2.0)),
        Case("fixed_3x3", "edge", _fixed([[1.0, 0.0, 0.0], [4.0, 5.0, 0.0], [7.0, 8.0, 9.0]],
                                         [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], 1.0, 1.0)),
        Case("fixed_zero_a", "edge", _fixed([[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]],
                                            1.0, 1.0)),
        Case("upper_part_ignored", "edge", _junk_upper),
        Case("empty_p", "edge", _make("normal", 5, 0, 1.0, 1.0)),
        Case("normal_f32", "small", _make("normal", 64, 32, 1.0, 0.5), dist="normal"),
        Case("uniform_f16", "small", _make("uniform", 100, 40, 0.5, 0.25, dtype=F16),
             dist="uniform"),
        Case("outliers_bf16", "small", _make("outliers", 77, 50, -1.0, 0.5, dtype=BF16),
             dist="outliers"),
        Case("outliers_f32", "small", _make("outliers", 128, 16, 1.0, 0.5), dist="outliers"),
        Case("perf_f16_8192", "full", _make("normal", 8192, 8192, 0.5, 0.25, dtype=F16),
             dist="normal"),
        Case("perf_bf16_4096x8192", "full", _make("uniform", 4096, 8192, 2.0, 0.5, dtype=BF16),
             dist="uniform"),
        Case("perf_bf16_16384x1024", "full", _make("normal", 16384, 1024, 1.0, 0.125,
                                                   dtype=BF16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", 4096, 4096, 1.0, 0.5), dist="normal"),
    ]


def cost(A, B, alpha, beta):
    n, p = B.shape
    tri = n * (n + 1) // 2
    return {"flops": 2 * tri * p + 2 * n * p,
            "bytes": (tri + B.numel() + n * p) * A.element_size()}
