import torch

from kbx_worker.casegen import Case


def fused_add_mean(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    if isinstance(other, (int, float)):
        other = torch.tensor(other, dtype=input.dtype, device=input.device)
    result = (input + alpha * other).mean(dim=dim, keepdim=keepdim, dtype=dtype)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _pair(draw, shape, other_shape=None, **kwargs):
    def make(c):
        return (draw(c, shape), draw(c, other_shape or shape)), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-3.0, high=5.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype, inf):
    def make(c):
        x = c.special(dtype, inf=inf)  # one row per special value, averaged against finite ones
        return (x[:, None], c.finite_special(dtype)[None, :]), {"dim": 1, "alpha": -0.5}
    return make


def _scalar_other(c):
    return (c.randn(37, 129), 2.5), {"dim": 1, "alpha": 3}


def _with_out(c):
    x, y = c.randn(65, 33, 7), c.randn(65, 1, 7)
    out = torch.zeros(65, 1, 7, device=c.device)
    return (x, y), {"dim": 1, "keepdim": True, "alpha": 0.5, "out": out}


def _with_out_dtype(c):
    x, y = c.randn(301, 64, dtype=torch.bfloat16), c.randn(64, dtype=torch.bfloat16)
    out = torch.zeros(64, device=c.device)
    return (x, y), {"dim": 0, "dtype": torch.float32, "out": out}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _special(f32, True)),
        Case("special_bf16_finite", "edge", _special(bf16, False)),
        Case("empty_slices_nan", "edge", _pair(_normal(), (0, 5), dim=0)),
        Case("scalar_input", "edge", _pair(_normal(), ())),
        Case("scalar_other", "edge", _scalar_other),
        Case("normal_all", "small", _pair(_normal(), (257, 129)), dist="normal"),
        Case("normal_dim_neg_keepdim", "small",
             _pair(_normal(), (19, 33, 65), dim=-1, keepdim=True, alpha=-2), dist="normal"),
        Case("normal_f16_dims_tuple", "small",
             _pair(_normal(f16), (7, 31, 97), (31, 1), dim=(0, 2)), dist="normal"),
        Case("uniform_bf16_dim0_dtype_f32", "small",
             _pair(_uniform(bf16), (513, 63), dim=0, dtype=torch.float32), dist="uniform"),
        Case("uniform_f32_alpha_float", "small",
             _pair(_uniform(), (3, 5, 7, 11), dim=(1, 3), alpha=0.25), dist="uniform"),
        Case("outliers_f32_dim1", "small", _pair(_outliers(), (129, 255), dim=1, alpha=0.5),
             dist="outliers"),
        Case("outliers_bf16_all", "small", _pair(_outliers(bf16), (40000,)), dist="outliers"),
        Case("out_f32_keepdim", "small", _with_out, dist="normal"),
        Case("out_bf16_to_f32", "small", _with_out_dtype, dist="normal"),
        Case("perf_f32_rows", "full", _pair(_normal(), (8192, 8192), dim=-1, alpha=0.5),
             dist="normal"),
        Case("perf_f32_cols", "full", _pair(_normal(), (8192, 8192), dim=0), dist="normal"),
        Case("perf_f32_all_64M", "full", _pair(_uniform(), (64 * 1024 * 1024,)), dist="uniform"),
        Case("perf_bf16_rows_bcast", "full",
             _pair(_normal(bf16), (16384, 4096), (4096,), dim=1, dtype=torch.float32),
             dist="normal"),
    ]


def cost(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    n = input.numel()
    other_bytes = other.numel() * other.element_size() if isinstance(other, torch.Tensor) else 0
    out_dtype = dtype or input.dtype
    if dim is None:
        out_n = 1
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        red = 1
        for d in dims:
            red *= input.shape[d]
        out_n = n // max(red, 1)
    return {"flops": 3 * n,
            "bytes": n * input.element_size() + other_bytes
            + out_n * torch.empty((), dtype=out_dtype).element_size()}
