import torch

from kbx_worker.casegen import Case


def fused_gather_masked_fill(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    gathered = torch.gather(input, dim, index, sparse_grad=sparse_grad)
    result = gathered.masked_fill(mask, value)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, in_shape, dim, idx_shape, value, mask_shape=None, mask_p=0.5, with_out=False,
          **kwargs):
    def make(c):
        x = draw(c, in_shape)
        index = c.randint(0, in_shape[dim], idx_shape)
        mask = c.bernoulli(idx_shape if mask_shape is None else mask_shape, p=mask_p)
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros(idx_shape, dtype=x.dtype, device=c.device)
        return (x, dim, index, mask, value), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-5.0, high=5.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _ints(c, shape):
    return c.randint(-1000, 1000, shape)


def _special(c):
    x = c.special(torch.float32).reshape(3, 6)
    return (x, 1, c.randint(0, 6, 3, 8), c.bernoulli(3, 8, p=0.3), float("-inf")), {}


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    n = _normal()
    return [
        Case("special_values_fill_neg_inf", "edge", _special),
        Case("fill_nan", "edge", _make(n, (4, 5), 0, (3, 5), float("nan"))),
        Case("int64_fill_truncates", "edge", _make(_ints, (5, 7), 1, (5, 4), 2.75)),
        Case("empty_index", "edge", _make(n, (3, 4), 1, (3, 0), 1.0)),
        Case("mask_scalar_true", "edge",
             lambda c: ((c.randn(4, 6), 1, c.randint(0, 6, 4, 3),
                         torch.ones((), dtype=torch.bool, device=c.device), 7.0), {})),
        Case("dim_negative_smaller_index", "edge", _make(n, (6, 5, 4), -1, (3, 2, 7), 0.0)),
        Case("normal_f32_dim1", "small", _make(n, (64, 128), 1, (64, 32), -1.0), dist="normal"),
        Case("normal_bf16_dim0_bcast_mask", "small",
             _make(_normal(bf16), (97, 33), 0, (201, 33), 0.5, mask_shape=(1, 33)), dist="normal"),
        Case("uniform_f32_3d_dim1", "small",
             _make(_uniform(), (9, 40, 17), 1, (9, 77, 17), 3.0, sparse_grad=True),
             dist="uniform"),
        Case("uniform_int64_dim0", "small", _make(_ints, (300, 20), 0, (513, 20), -7),
             dist="uniform"),
        Case("outliers_f32_dense_mask", "small",
             _make(_outliers(), (129, 65), 1, (129, 255), -2.0, mask_p=0.9), dist="outliers"),
        Case("out_f32", "small", _make(n, (31, 45), 1, (31, 60), 1.5, with_out=True),
             dist="normal"),
        Case("perf_f32_rows", "full", _make(n, (8192, 8192), 1, (8192, 4096), -1.0),
             dist="normal"),
        Case("perf_bf16_cols_bcast_mask", "full",
             _make(_normal(bf16), (4096, 16384), 0, (8192, 16384), 0.0, mask_shape=(1, 16384)),
             dist="normal"),
        Case("perf_int64_out", "full",
             _make(_ints, (16384, 2048), 1, (16384, 2048), -1, with_out=True), dist="uniform"),
    ]


def cost(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    n = index.numel()
    return {"flops": n,
            "bytes": n * (index.element_size() + 2 * input.element_size()) + mask.numel()}
