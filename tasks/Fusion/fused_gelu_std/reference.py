import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_gelu_std(input, dim=None, keepdim=False, correction=1, approximate='none', out=None):
    g = F.gelu(input, approximate=approximate)
    return torch.std(g, dim=dim, keepdim=keepdim, correction=correction, out=out)


def _out_shape(shape, dim, keepdim):
    if dim is None:
        return [1] * len(shape) if keepdim else []
    dims = {d % len(shape) for d in ((dim,) if isinstance(dim, int) else dim)}
    return [1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims]


def _make(draw, shape, with_out=False, **kwargs):
    def make(c):
        x = draw(c, shape)
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros(_out_shape(shape, kw.get("dim"), kw.get("keepdim", False)),
                                    dtype=x.dtype, device=c.device)
        return (x,), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-3.0, high=5.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype, nan):
    def make(c):
        s = c.special(dtype, inf=False, nan=nan)
        return ((c.randn(s.shape[0], 6) + s.float()[:, None]).to(dtype),), {"dim": 1}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("special_rows_nan", "edge", _special(f32, True)),
        Case("special_rows_bf16", "edge", _special(bf16, False)),
        Case("one_element_nan", "edge", _make(n, (5, 1), dim=1)),
        Case("empty_rows_nan", "edge", _make(n, (0, 5), dim=0)),
        Case("normal_all", "small", _make(n, (128, 256)), dist="normal"),
        Case("normal_cols_tanh", "small", _make(n, (301, 65), dim=0, approximate="tanh"),
             dist="normal"),
        Case("normal_f16_rows_keepdim", "small", _make(_normal(f16), (97, 513), dim=1,
                                                       keepdim=True), dist="normal"),
        Case("uniform_bf16_dims_tuple", "small",
             _make(_uniform(bf16), (7, 31, 97), dim=(0, 2), correction=0), dist="uniform"),
        Case("uniform_f32_all_keepdim_c2", "small",
             _make(_uniform(), (3, 5, 7, 11), keepdim=True, correction=2), dist="uniform"),
        Case("outliers_f32_rows_half_corr", "small",
             _make(_outliers(), (129, 255), dim=-1, correction=0.5), dist="outliers"),
        Case("outliers_bf16_all_tanh", "small",
             _make(_outliers(bf16), (40000,), approximate="tanh"), dist="outliers"),
        Case("out_f32_cols", "small", _make(n, (65, 33, 7), with_out=True, dim=1),
             dist="normal"),
        Case("perf_f32_rows", "full", _make(n, (8192, 8192), dim=1), dist="normal"),
        Case("perf_bf16_cols", "full", _make(_normal(bf16), (16384, 4096), dim=0),
             dist="normal"),
        Case("perf_f32_all_64M_tanh", "full",
             _make(_uniform(), (64 * 1024 * 1024,), approximate="tanh"), dist="uniform"),
        Case("perf_f16_tuple_out", "full",
             _make(_normal(f16), (64, 1024, 1024), with_out=True, dim=(0, 2)), dist="normal"),
    ]


def cost(input, dim=None, keepdim=False, correction=1, approximate='none', out=None):
    n = input.numel()
    outs = 1
    for s in _out_shape(list(input.shape), dim, keepdim):
        outs *= s
    return {"flops": 25 * n, "bytes": (n + outs) * input.element_size()}
