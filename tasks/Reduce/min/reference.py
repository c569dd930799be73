import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def min(input_tensor, dim, keepdim=False):
    values, indices = torch.min(input_tensor, dim, keepdim)
    return (values, indices)


def _case(make_input, dim, **kwargs):
    return lambda c: ((make_input(c), dim), kwargs)


def _shuffle_rows(c, row, nrows):
    """nrows copies of the 1-D tensor row, each in its own random order."""
    keys = torch.rand(nrows, row.numel(), generator=c.gen, device=c.device)
    return row[torch.argsort(keys, dim=1)]


def _special_rows(c):
    return _shuffle_rows(c, c.special(F32, nan=False), 8)


def _nan_rows(c):
    x = c.randn(16, 33)
    return torch.where(c.bernoulli(16, 33, p=0.05), torch.full_like(x, float("nan")), x)


def _ties(c, *shape, dtype=F32):
    return c.randint(0, 3, *shape).to(dtype)


def cases():
    return [
        Case("special_rows", "edge", _case(_special_rows, 1)),
        Case("special_f16_rows", "edge",
             _case(lambda c: _shuffle_rows(c, c.special(F16, nan=False), 5).t().contiguous(), 0)),
        Case("nan_rows", "edge", _case(_nan_rows, 1)),
        Case("ties", "edge", _case(lambda c: _ties(c, 17, 29), 1)),
        Case("ties_3d_keep", "edge", _case(lambda c: _ties(c, 4, 9, 6), 1, keepdim=True)),
        Case("length_one", "edge", _case(lambda c: c.randn(7, 1), 1)),
        Case("empty_kept", "edge", _case(lambda c: c.randn(0, 9), 1)),
        Case("int64", "edge", _case(lambda c: c.randint(-50, 50, 23, 41), 0)),
        Case("normal_dim0", "small", _case(lambda c: c.randn(128, 255), 0), dist="normal"),
        Case("normal_dim1", "small", _case(lambda c: c.randn(127, 256), 1), dist="normal"),
        Case("normal_3d_keep", "small", _case(lambda c: c.randn(8, 16, 33), 2, keepdim=True), dist="normal"),
        Case("uniform_neg_dim", "small", _case(lambda c: c.uniform(5, 61, 7, low=-3, high=5), -2),
             dist="uniform"),
        Case("outliers_bf16", "small", _case(lambda c: c.outliers(64, 1001, dtype=BF16), 1), dist="outliers"),
        Case("f16_ties", "small", _case(lambda c: c.randn(61, 1000, dtype=F16), 1), dist="normal"),
        Case("int32", "small", _case(lambda c: c.randint(-1000, 1000, 300, 77, dtype=torch.int32), 1),
             dist="uniform"),
        Case("perf_rows_f32", "full", _case(lambda c: c.randn(8192, 8192), 1), dist="normal"),
        Case("perf_cols_f32", "full", _case(lambda c: c.randn(16384, 4096), 0), dist="normal"),
        Case("perf_rows_bf16", "full", _case(lambda c: c.randn(4096, 16384, dtype=BF16), -1), dist="normal"),
        Case("perf_middle_f32", "full", _case(lambda c: c.randn(64, 1024, 1024), 1), dist="normal"),
    ]


def cost(input_tensor, dim, keepdim=False):
    n = input_tensor.numel()
    kept = n // max(input_tensor.shape[dim], 1)
    return {"flops": n, "bytes": n * input_tensor.element_size() + kept * (input_tensor.element_size() + 8)}
