import torch
from torch import Tensor

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def matrix_vector_dot(A: Tensor, x: Tensor, y: Tensor, alpha: float, beta: float) -> Tensor:
    y_new = alpha * torch.mv(A, x) + beta * y
    y.copy_(y_new)
    return torch.dot(y, x)


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype, scale=20.0 if dtype == F16 else 1000.0)
    raise ValueError(dist)


def _make(dist, n, alpha, beta, dtype=F32):
    def make(c):
        A = _draw(c, dist, n, n, dtype=dtype)
        x = _draw(c, dist, n, dtype=dtype)
        y = _draw(c, dist, n, dtype=dtype)
        return (A, x, y, alpha, beta), {}
    return make


def _fixed(x, y, alpha, beta):
    def make(c):
        A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=c.device)
        return (A, torch.tensor(x, device=c.device), torch.tensor(y, device=c.device), alpha,
                beta), {}
    return make


def _special_y(c):
    """y holds zeros, extremes, subnormals, +-inf and NaN: they propagate into the updated y
    (0.5 * y, so the extremes stay finite) and the NaN makes the returned dot product NaN."""
    y = c.special(F32)
    n = y.numel()
    return (c.randn(n, n), c.randn(n), y, 1.0, 0.5), {}


def cases():
    return [
        Case("fixed_beta0", "edge", _fixed([1.0, 1.0], [0.0, 0.0], 1.0, 0.0)),
        Case("fixed_beta1", "edge", _fixed([1.0, 1.0], [1.0, 1.0], 1.0, 1.0)),
        Case("fixed_half", "edge", _fixed([2.0, 3.0], [1.0, 1.0], 0.5, 0.5)),
        Case("special_y", "edge", _special_y),
        Case("empty", "edge", _make("normal", 0, 1.0, 1.0)),
        Case("normal_f32", "small", _make("normal", 64, 1.0, 0.0), dist="normal"),
        Case("uniform_f32", "small", _make("uniform", 129, 0.5, 0.5), dist="uniform"),
        Case("outliers_f32", "small", _make("outliers", 100, -1.5, 2.0), dist="outliers"),
        Case("normal_f16", "small", _make("normal", 200, 0.0625, 1.0, dtype=F16), dist="normal"),
        Case("outliers_bf16", "small", _make("outliers", 131, 1.0, 0.5, dtype=BF16),
             dist="outliers"),
        Case("perf_f16_16384", "full", _make("normal", 16384, 1 / 128, 0.5, dtype=F16),
             dist="normal"),
        Case("perf_bf16_12288", "full", _make("uniform", 12288, 1 / 64, 0.5, dtype=BF16),
             dist="uniform"),
        Case("perf_bf16_4096", "full", _make("normal", 4096, 1 / 64, 0.5, dtype=BF16),
             dist="normal"),
        Case("perf_f32_8192", "full", _make("normal", 8192, 1.0, 0.5), dist="normal"),
    ]


def cost(A, x, y, alpha, beta):
    n, m = A.shape
    elems = A.numel() + x.numel() + 2 * y.numel() + 1
    return {"flops": 2 * n * m + 5 * n, "bytes": elems * A.element_size()}
