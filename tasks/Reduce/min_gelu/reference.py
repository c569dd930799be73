import torch
import torch.nn.functional as F
from torch import Tensor

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def min_gelu(input: Tensor, dim=None, keepdim=False, approximate="none", out=None) -> Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Invalid value for approximate: {approximate}. Choose 'none' or 'tanh'.")
    g = F.gelu(input, approximate=approximate)
    if dim is None:
        r = torch.min(g)
        if out is not None:
            out.copy_(r)
            return out
        return r
    values, indices = torch.min(g, dim=dim, keepdim=keepdim)
    if out is not None:
        out[0].copy_(values)
        out[1].copy_(indices)
        return (out[0], out[1])
    return (values, indices)


def _lattice(c, *shape, step=2.0 ** -10):
    """Values on a grid in [-0.5, 4): GELU is increasing there and grid neighbours differ by far more
    than rounding, so the position of the minimum is well defined (exact repeats tie on purpose)."""
    return c.randint(int(-0.5 / step), int(4 / step), *shape).to(F32) * step


def _out_pair(c, x, dim, keepdim):
    shape = list(x.shape)
    d = dim % x.dim()
    if keepdim:
        shape[d] = 1
    else:
        del shape[d]
    return (torch.zeros(shape, dtype=x.dtype, device=c.device),
            torch.zeros(shape, dtype=torch.int64, device=c.device))


def _case(make_input, with_out=False, **kwargs):
    def make(c):
        x = make_input(c)
        kw = dict(kwargs)
        if with_out:
            if kw.get("dim") is None:
                kw["out"] = torch.zeros((), dtype=x.dtype, device=c.device)
            else:
                kw["out"] = _out_pair(c, x, kw["dim"], kw.get("keepdim", False))
        return (x,), kw
    return make


def cases():
    return [
        Case("special_all", "edge", _case(lambda c: c.special(F32, inf=False, nan=False))),
        Case("special_nan_all", "edge", _case(lambda c: c.special(F32, inf=False))),
        Case("special_f16_tanh", "edge", _case(lambda c: c.special(F16, inf=False, nan=False),
                                               approximate="tanh")),
        Case("scalar", "edge", _case(lambda c: c.randn(()))),
        Case("ties_rows", "edge", _case(lambda c: _lattice(c, 9, 40, step=0.5), dim=1)),
        Case("normal_all", "small", _case(lambda c: c.randn(4096)), dist="normal"),
        Case("normal_all_tanh_out", "small", _case(lambda c: c.randn(77, 91), approximate="tanh",
                                                   with_out=True), dist="normal"),
        Case("uniform_all_f16", "small", _case(lambda c: c.uniform(4097, low=-3, high=3, dtype=F16)),
             dist="uniform"),
        Case("outliers_all_bf16", "small", _case(lambda c: c.outliers(333, 65, dtype=BF16)), dist="outliers"),
        Case("outliers_all_tanh", "small", _case(lambda c: c.outliers(7919), approximate="tanh"),
             dist="outliers"),
        Case("lattice_dim1", "small", _case(lambda c: _lattice(c, 128, 256), dim=1), dist="lattice"),
        Case("lattice_dim1_keep", "small", _case(lambda c: _lattice(c, 127, 255), dim=1, keepdim=True),
             dist="lattice"),
        Case("lattice_dim0_tanh", "small", _case(lambda c: _lattice(c, 300, 77), dim=0, approximate="tanh"),
             dist="lattice"),
        Case("lattice_3d_out", "small", _case(lambda c: _lattice(c, 6, 50, 33), dim=-2, with_out=True),
             dist="lattice"),
        Case("perf_all_f32", "full", _case(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_all_bf16_tanh", "full", _case(lambda c: c.randn(8192, 8192, dtype=BF16),
                                                 approximate="tanh"), dist="normal"),
        Case("perf_rows_f32", "full", _case(lambda c: _lattice(c, 8192, 8192), dim=1), dist="lattice"),
        Case("perf_cols_f32_tanh", "full", _case(lambda c: _lattice(c, 16384, 4096), dim=0,
                                                 approximate="tanh"), dist="lattice"),
    ]


def cost(input, dim=None, keepdim=False, approximate="none", out=None):
    n = input.numel()
    kept = 1 if dim is None else n // max(input.shape[dim], 1)
    idx = 0 if dim is None else 8 * kept
    return {"flops": 21 * n, "bytes": n * input.element_size() + kept * input.element_size() + idx}
