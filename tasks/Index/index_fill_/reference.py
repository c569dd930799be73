import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def index_fill_(dim, x, index, value):
    return x.index_fill_(dim, index, value)


def _values(c, shape, dist, dtype):
    if dtype in (torch.int32, torch.int64):
        return c.randint(-1000, 1000, *shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-5, high=5, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype)
    return c.randn(*shape, dtype=dtype)


def _case(dim, shape, n_index, value, dist="normal", dtype=F32, unique=False):
    """Fill n_index positions of dimension dim (random, repeats allowed unless unique) with value."""
    def make(c):
        x = _values(c, shape, dist, dtype)
        size = shape[dim]
        if unique:
            index = c.randperm(size)[:n_index]
        else:
            index = c.randint(0, size, n_index) if size else c.randint(0, 1, 0)
        return (dim, x, index, value), {}
    return make


def cases():
    return [
        Case("fill_nan", "edge", _case(0, (9, 13), 3, float("nan"))),
        Case("fill_neg_inf_cols", "edge", _case(1, (9, 13), 4, float("-inf"))),
        Case("fill_neg_zero", "edge", _case(0, (6, 5), 2, -0.0)),
        Case("empty_index", "edge", _case(0, (6, 5), 0, 1.0)),
        Case("empty_tensor", "edge", _case(1, (0, 5), 2, 1.0)),
        Case("one_d", "edge", _case(0, (17,), 5, 2.5)),
        Case("int_value_f32", "edge", _case(0, (5, 5), 3, 9)),
        Case("int32_tensor", "edge", _case(1, (7, 11), 4, -7, dtype=torch.int32)),
        Case("normal_rows", "small", _case(0, (64, 128), 16, 3.14), dist="normal"),
        Case("normal_cols_unique", "small", _case(1, (61, 257), 100, -1.5, unique=True), dist="normal"),
        Case("normal_neg_dim_3d", "small", _case(-2, (5, 33, 41), 20, 0.0), dist="normal"),
        Case("uniform_last_dim", "small", _case(2, (7, 9, 300), 150, 1e30), dist="uniform"),
        Case("outliers_bf16", "small", _case(0, (300, 77), 64, -2.0, dist="outliers", dtype=BF16),
             dist="outliers"),
        Case("normal_f16_dups", "small", _case(1, (100, 50), 200, 0.5, dtype=F16), dist="normal"),
        Case("int64_rows", "small", _case(0, (129, 65), 40, 123456789, dtype=torch.int64), dist="uniform"),
        Case("perf_rows_f32", "full", _case(0, (8192, 8192), 2048, 3.14, unique=True), dist="normal"),
        Case("perf_cols_f32", "full", _case(1, (8192, 8192), 1024, -1.0, unique=True), dist="normal"),
        Case("perf_middle_bf16", "full", _case(1, (64, 2048, 1024), 8192, 0.0, dtype=BF16), dist="normal"),
        Case("perf_half_rows_f16", "full", _case(0, (16384, 8192), 8192, 2.0, dtype=F16, unique=True),
             dist="normal"),
    ]


def cost(dim, x, index, value):
    # In place: only the filled slices are written (distinct indices), plus the index read.
    d = dim % x.dim()
    slice_elems = x.numel() // max(x.shape[d], 1)
    distinct = int(torch.unique(index).numel()) if index.numel() else 0
    return {"flops": 0, "bytes": distinct * slice_elems * x.element_size() + index.numel() * 8}
