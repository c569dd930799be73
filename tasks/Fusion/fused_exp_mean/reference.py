import torch

from kbx_worker.casegen import Case


def fused_exp_mean(input, dim=None, keepdim=False, dtype=None, out=None):
    x = input if dtype is None else input.to(dtype)
    result = torch.exp(x).mean(dim=dim, keepdim=keepdim)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, shape, with_out=None, **kwargs):
    """with_out: the shape of an out tensor to pass (dtype: kwargs' dtype or the input's)."""
    def make(c):
        x = draw(c, shape)
        kw = dict(kwargs)
        if with_out is not None:
            kw["out"] = torch.zeros(with_out, dtype=kw.get("dtype") or x.dtype, device=c.device)
        return (x,), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=2.0)


def _uniform(dtype=torch.float32, r=10.0):
    return lambda c, shape: c.uniform(shape, low=-r, high=r, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=15.0)


def _special(dtype):
    def make(c):
        s = c.special(dtype)
        x = (c.uniform(s.shape[0], 5, low=-1.0, high=1.0) + s.float()[:, None]).to(dtype)
        return (x,), {"dim": 1}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("special_f32_rows", "edge", _special(f32)),
        Case("special_bf16_rows", "edge", _special(bf16)),
        Case("empty_slices_nan", "edge", _make(n, (0, 4), dim=0)),
        Case("scalar", "edge", _make(n, ())),
        Case("normal_all", "small", _make(n, (257, 129)), dist="normal"),
        Case("normal_f16_dim_neg_keepdim", "small",
             _make(_normal(f16), (19, 33, 65), dim=-1, keepdim=True), dist="normal"),
        Case("uniform_f16_to_f32_dims", "small",
             _make(_uniform(f16, 14.0), (7, 31, 97), dim=(0, 2), dtype=torch.float32),
             dist="uniform"),
        Case("uniform_bf16_dim0", "small", _make(_uniform(bf16), (513, 63), dim=0),
             dist="uniform"),
        Case("uniform_f32_to_f64", "small", _make(_uniform(), (3, 5, 7, 11), dim=(1, 3),
                                                   dtype=torch.float64), dist="uniform"),
        Case("outliers_f32_dim1", "small", _make(_outliers(), (129, 255), dim=1),
             dist="outliers"),
        Case("outliers_bf16_all_keepdim", "small",
             _make(_outliers(bf16), (200, 200), keepdim=True), dist="outliers"),
        Case("out_f32_dim1", "small", _make(n, (65, 33, 7), with_out=(65, 7), dim=1),
             dist="normal"),
        Case("out_bf16_to_f32", "small",
             _make(_normal(bf16), (301, 64), with_out=(64,), dim=0, dtype=torch.float32),
             dist="normal"),
        Case("perf_f32_rows", "full", _make(n, (8192, 8192), dim=-1), dist="normal"),
        Case("perf_bf16_cols_f32_out", "full",
             _make(_normal(bf16), (8192, 8192), with_out=(8192,), dim=0, dtype=torch.float32),
             dist="normal"),
        Case("perf_f32_all_128M", "full", _make(_uniform(), (16384, 8192)), dist="uniform"),
        Case("perf_f16_rows_keepdim", "full",
             _make(_normal(f16), (32768, 4096), dim=1, keepdim=True), dist="normal"),
    ]


def cost(input, dim=None, keepdim=False, dtype=None, out=None):
    n = input.numel()
    out_dtype = dtype or input.dtype
    if dim is None:
        outs = 1
    else:
        red = 1
        for d in ((dim,) if isinstance(dim, int) else dim):
            red *= input.shape[d]
        outs = n // max(red, 1)
    return {"flops": 10 * n,
            "bytes": n * input.element_size()
            + outs * torch.empty((), dtype=out_dtype).element_size()}
