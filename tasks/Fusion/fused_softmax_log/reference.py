import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_softmax_log(input, dim=-1, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return F.softmax(input.log(), dim=dim)


def _make(make_input, **kwargs):
    return lambda c: ((make_input(c),), dict(kwargs))


def _lognormal(c, *shape, dtype=torch.float32, sigma=2.0):
    return torch.exp(c.randn(*shape) * sigma).to(dtype)


def _abs_outliers(c, *shape, dtype=torch.float32):
    return (c.outliers(*shape).abs() + 1e-3).to(dtype)


def _positive_special(in_dtype, **kwargs):
    # finite special values made positive, each row with one of them replaced by zero (log 0 = -inf,
    # probability 0); no row is all zeros
    def make(c):
        s = c.finite_special(in_dtype).abs()
        s = s[s > 0]
        rows = s.repeat(s.numel(), 1)
        rows.fill_diagonal_(0.0)
        return (rows,), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _positive_special(f32)),
        Case("special_f16", "edge", _positive_special(f16)),
        Case("special_bf16_to_f32", "edge", _positive_special(bf16, dtype=f32)),
        Case("empty_rows_f32", "edge", _make(lambda c: c.uniform(0, 9, low=0.1, high=1.0))),
        Case("single_column_f32", "edge", _make(lambda c: c.uniform(17, 1, low=0.1, high=3.0))),
        Case("uniform_f32", "small", _make(lambda c: c.uniform(100, 373, low=1e-3, high=5.0)),
             dist="uniform"),
        Case("uniform_f32_dim0", "small",
             _make(lambda c: c.uniform(1021, 31, low=0.5, high=2.0), dim=0), dist="uniform"),
        Case("lognormal_f32_3d_dim1", "small", _make(lambda c: _lognormal(c, 7, 301, 13), dim=1),
             dist="lognormal"),
        Case("lognormal_f16", "small", _make(lambda c: _lognormal(c, 64, 1000, dtype=f16, sigma=1.0)),
             dist="lognormal"),
        Case("outliers_bf16_to_f32", "small",
             _make(lambda c: _abs_outliers(c, 129, 257, dtype=bf16), dtype=f32), dist="outliers"),
        Case("outliers_f32_1d", "small", _make(lambda c: _abs_outliers(c, 7919), dim=0),
             dist="outliers"),
        Case("perf_f32_8192x8192", "full", _make(lambda c: c.uniform(8192, 8192, low=1e-3, high=4.0)),
             dist="uniform"),
        Case("perf_bf16_vocab_to_f32", "full",
             _make(lambda c: _lognormal(c, 4096, 32000, dtype=bf16), dtype=f32), dist="lognormal"),
        Case("perf_f16_16384x4096", "full",
             _make(lambda c: _lognormal(c, 16384, 4096, dtype=f16, sigma=1.0)), dist="lognormal"),
        Case("perf_f32_dim0", "full", _make(lambda c: c.uniform(4096, 8192, low=0.1, high=2.0), dim=0),
             dist="uniform"),
    ]


def cost(input, dim=-1, dtype=None):
    n = input.numel()
    out_size = (torch.empty((), dtype=dtype).element_size() if dtype is not None
                else input.element_size())
    return {"flops": 30 * n, "bytes": n * (input.element_size() + out_size)}
