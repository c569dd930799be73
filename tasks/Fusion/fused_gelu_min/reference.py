import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_gelu_min(input, approximate='none', dim=None, keepdim=False, out=None):
    if approximate not in ('none', 'tanh'):
        raise ValueError("Unknown approximation method. Choose either 'none' or 'tanh'.")
    g = F.gelu(input, approximate=approximate)
    if dim is None:
        result = torch.min(g)
        if out is not None:
            out.copy_(result)
            return out
        return result
    values, indices = torch.min(g, dim=dim, keepdim=keepdim)
    if out is not None:
        out[0].copy_(values)
        out[1].copy_(indices)
        return out[0], out[1]
    return values, indices


_XMIN = -0.7518  # GELU's minimiser; GELU(-0.7518) = -0.16997


def _planted(x, dim, c):
    """x with GELU's basin (GELU < -0.15) emptied and one element per slice along dim (per tensor
    when dim is None) set near the minimiser: every slice then has a single minimum at least 0.02
    below its other elements."""
    x64 = x.double()
    basin = F.gelu(x64) < -0.15
    x64 = torch.where(basin & (x64 < _XMIN), x64 - 0.8, torch.where(basin, x64 + 0.8, x64))
    if x64.numel() == 0:
        return x64.to(x.dtype)
    flat = x64.reshape(-1, 1) if dim is None else x64.movedim(dim, -1)
    where = c.randint(0, flat.shape[-1], flat.shape[:-1] + (1,))
    value = c.uniform(flat.shape[:-1] + (1,), low=-0.78, high=-0.72).double()
    flat = flat.scatter(-1, where, value)
    x64 = flat.reshape(x64.shape) if dim is None else flat.movedim(-1, dim)
    return x64.to(x.dtype)


def _make(draw, shape, with_out=False, **kwargs):
    def make(c):
        dim = kwargs.get("dim")
        x = _planted(draw(c, shape), dim, c)
        kw = dict(kwargs)
        if with_out:
            if dim is None:
                kw["out"] = torch.zeros((), dtype=x.dtype, device=c.device)
            else:
                red = list(shape)
                if kw.get("keepdim"):
                    red[dim] = 1
                else:
                    del red[dim]
                kw["out"] = (torch.zeros(red, dtype=x.dtype, device=c.device),
                             torch.zeros(red, dtype=torch.int64, device=c.device))
        return (x,), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-4.0, high=4.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype, nan, **kwargs):
    return lambda c: ((c.special(dtype, inf=False, nan=nan),), dict(kwargs))


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("special_with_nan", "edge", _special(f32, True)),
        Case("special_finite_tanh", "edge", _special(f32, False, approximate="tanh")),
        Case("special_finite_bf16", "edge", _special(bf16, False)),
        Case("empty_rows", "edge", _make(n, (0, 5), dim=1)),
        Case("single_element_dim", "edge", _make(n, (4, 1), dim=1, keepdim=True)),
        Case("normal_all", "small", _make(n, (4096,), approximate="tanh"), dist="normal"),
        Case("normal_rows", "small", _make(n, (64, 128), dim=1), dist="normal"),
        Case("normal_f16_cols_keepdim", "small", _make(_normal(f16), (257, 65), dim=0,
                                                       keepdim=True), dist="normal"),
        Case("uniform_bf16_3d_middle", "small", _make(_uniform(bf16), (7, 301, 9), dim=1),
             dist="uniform"),
        Case("uniform_f32_tanh_neg_dim", "small",
             _make(_uniform(), (33, 17, 31), dim=-1, approximate="tanh"), dist="uniform"),
        Case("outliers_f32_rows", "small", _make(_outliers(), (100, 301), dim=1),
             dist="outliers"),
        Case("outliers_bf16_all", "small", _make(_outliers(bf16), (200, 250)), dist="outliers"),
        Case("out_pair_f32", "small", _make(n, (45, 77), with_out=True, dim=0), dist="normal"),
        Case("out_scalar_f16", "small", _make(_normal(f16), (3001,), with_out=True),
             dist="normal"),
        Case("perf_f32_rows", "full", _make(n, (8192, 8192), dim=1), dist="normal"),
        Case("perf_bf16_cols", "full", _make(_normal(bf16), (16384, 4096), dim=0),
             dist="normal"),
        Case("perf_f32_all_64M", "full", _make(_uniform(), (64 * 1024 * 1024,)), dist="uniform"),
        Case("perf_f16_rows_tanh_out", "full",
             _make(_normal(f16), (4096, 16384), with_out=True, dim=-1, keepdim=True,
                   approximate="tanh"), dist="normal"),
    ]


def cost(input, approximate='none', dim=None, keepdim=False, out=None):
    n = input.numel()
    outs = 1 if dim is None else n // max(input.shape[dim], 1)
    per_out = input.element_size() + (0 if dim is None else 8)
    return {"flops": 20 * n, "bytes": n * input.element_size() + outs * per_out}
