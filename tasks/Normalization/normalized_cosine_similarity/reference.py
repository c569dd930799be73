import torch
import torch.nn.functional as F
from torch import Tensor

from kbx_worker.casegen import Case


def normalized_cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps_similarity: float = 1e-08,
                                 p_norm: float = 2, eps_norm: float = 1e-12) -> Tensor:
    n1 = F.normalize(x1, p=p_norm, dim=dim, eps=eps_norm)
    n2 = F.normalize(x2, p=p_norm, dim=dim, eps=eps_norm)
    return F.cosine_similarity(n1, n2, dim=dim, eps=eps_similarity)


def _pair(make, **kwargs):
    return lambda c: ((make(c), make(c)), kwargs)


def _fixed(a, b, **kwargs):
    return lambda c: ((torch.tensor(a, device=c.device), torch.tensor(b, device=c.device)), kwargs)


def _related(shape, factor, **kwargs):
    """x2 = factor * x1 (+-1 exactly), with a zero row in each to exercise the eps clamps."""
    def make(c):
        x1 = c.randn(*shape)
        x1[0].zero_()
        return (x1, x1 * factor), kwargs
    return make


def cases():
    bf16 = torch.bfloat16
    return [
        Case("fixed_2x2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]], [[2.0, 3.0], [4.0, 5.0]])),
        Case("fixed_1x3_dim0", "edge", _fixed([[1.0, 2.0, 3.0]], [[2.0, 3.0, 4.0]], dim=0)),
        Case("fixed_orthogonal_p1", "edge",
             _fixed([[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]], p_norm=1)),
        Case("fixed_tiny_eps_norm", "edge",
             _fixed([[1e-10, 0.0], [0.0, 1e-10]], [[0.0, 1e-10], [1e-10, 0.0]], eps_norm=1e-10)),
        Case("parallel_with_zero_row", "edge", _related((6, 33), 4.0)),
        Case("antiparallel_with_zero_row", "edge", _related((6, 33), -0.5)),
        Case("empty_batch", "edge", _pair(lambda c: c.randn(0, 16))),
        Case("normal_f32", "small", _pair(lambda c: c.randn(256, 128)), dist="normal"),
        Case("normal_f32_p1", "small", _pair(lambda c: c.randn(128, 257), p_norm=1), dist="normal"),
        Case("uniform_f32_lastdim", "small", _pair(lambda c: c.uniform(7, 13, 301, low=-1, high=1), dim=-1),
             dist="uniform"),
        Case("outliers_f32", "small", _pair(lambda c: c.outliers(199, 129)), dist="outliers"),
        Case("normal_f32_nchw", "small", _pair(lambda c: c.randn(3, 40, 17, 19)), dist="normal"),
        Case("normal_f32_dim0_p3", "small", _pair(lambda c: c.randn(95, 300), dim=0, p_norm=3),
             dist="normal"),
        Case("normal_bf16", "small", _pair(lambda c: c.randn(300, 96, dtype=bf16)), dist="normal"),
        Case("outliers_bf16_nchw", "small", _pair(lambda c: c.outliers(2, 64, 15, 21, dtype=bf16)),
             dist="outliers"),
        Case("perf_f32_65536x1024", "full", _pair(lambda c: c.randn(65536, 1024)), dist="normal"),
        Case("perf_f32_nchw_64x256x56x56", "full", _pair(lambda c: c.randn(64, 256, 56, 56)),
             dist="normal"),
        Case("perf_f32_262144x256_p1", "full", _pair(lambda c: c.uniform(262144, 256, low=-1, high=1),
                                                      p_norm=1), dist="uniform"),
        Case("perf_bf16_32768x4096", "full", _pair(lambda c: c.randn(32768, 4096, dtype=bf16)),
             dist="normal"),
    ]


def cost(x1, x2, dim=1, eps_similarity=1e-08, p_norm=2, eps_norm=1e-12):
    n = x1.numel()
    out = n // max(x1.shape[dim], 1)
    es = x1.element_size()
    return {"flops": 8 * n, "bytes": 2 * n * es + out * es}
