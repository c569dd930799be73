import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype = None) -> torch.Tensor:
    return F.softmax(input, dim=dim, dtype=dtype)


def _one(make_input, dim, **kwargs):
    return lambda c: ((make_input(c), dim), kwargs)


def _masked(c):
    """Attention-style scores: some entries are -inf, but never a whole row."""
    x = c.randn(37, 53)
    mask = c.bernoulli(37, 53, p=0.4)
    mask[:, 5] = False
    return x.masked_fill(mask, float("-inf"))


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("masked_f32", "edge", _one(_masked, -1)),
        Case("masked_f32_dim0", "edge", _one(lambda c: _masked(c).t().contiguous(), 0)),
        Case("extremes_f32", "edge", _one(lambda c: c.finite_special(f32), 0)),
        Case("extremes_f16", "edge", _one(lambda c: c.finite_special(f16), 0)),
        Case("extremes_bf16_to_f32", "edge", _one(lambda c: c.finite_special(bf16), 0, dtype=f32)),
        Case("size1_dim_f32", "edge", _one(lambda c: c.randn(9, 1), 1)),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 10), 1)),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37), -1), dist="normal"),
        Case("normal_f32_dim0", "small", _one(lambda c: c.randn(129, 257), 0), dist="normal"),
        Case("uniform_f16_middle", "small",
             _one(lambda c: c.uniform(3, 517, 21, low=-6, high=6, dtype=f16), 1), dist="uniform"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=bf16), 1),
             dist="outliers"),
        Case("logits_f32", "small", _one(lambda c: c.randn(64, 1000, std=8.0), -1), dist="logits"),
        Case("logits_f16_to_f32", "small", _one(lambda c: c.randn(100, 257, std=4.0, dtype=f16), -1,
                                               dtype=f32), dist="logits"),
        Case("normal_bf16_long_row", "small", _one(lambda c: c.randn(3, 20011, dtype=bf16), -1),
             dist="normal"),
        Case("perf_f32_rows1024", "full", _one(lambda c: c.randn(65536, 1024), -1), dist="normal"),
        Case("perf_bf16_vocab", "full", _one(lambda c: c.randn(8192, 32000, std=4.0, dtype=bf16), -1),
             dist="logits"),
        Case("perf_f16_dim0", "full", _one(lambda c: c.randn(8192, 8192, dtype=f16), 0), dist="normal"),
        Case("perf_f32_8k", "full", _one(lambda c: c.randn(8192, 8192), 1), dist="normal"),
    ]


def cost(input, dim, dtype=None):
    n = input.numel()
    out_size = torch.empty((), dtype=dtype or input.dtype).element_size()
    return {"flops": 5 * n, "bytes": n * (input.element_size() + out_size)}
