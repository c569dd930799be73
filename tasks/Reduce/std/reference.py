import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def std(input: torch.Tensor, dim=None, correction=1, keepdim=False, out=None) -> torch.Tensor:
    r = torch.std(input, dim=dim, correction=correction, keepdim=keepdim)
    if out is not None:
        out.copy_(r)
        return out
    return r


def _case(make_input, with_out=False, **kwargs):
    def make(c):
        x = make_input(c)
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros_like(std(x, **kwargs))
        return (x,), kw
    return make


def _nonfinite_rows(c):
    x = c.randn(5, 40)
    x[0, 3] = float("inf")
    x[1, 8] = float("nan")
    x[2, 0] = float("-inf")
    return x


def cases():
    return [
        Case("nonfinite_rows", "edge", _case(_nonfinite_rows, dim=1)),
        Case("single_element", "edge", _case(lambda c: c.randn(7, 1), dim=1)),
        Case("single_element_pop", "edge", _case(lambda c: c.randn(7, 1), dim=1, correction=0)),
        Case("empty_kept", "edge", _case(lambda c: c.randn(0, 9), dim=1, keepdim=True)),
        Case("all_small", "edge", _case(lambda c: c.randn(5))),
        Case("normal_all", "small", _case(lambda c: c.randn(4099)), dist="normal"),
        Case("normal_dim0", "small", _case(lambda c: c.randn(128, 255), dim=0), dist="normal"),
        Case("normal_dim1_keep", "small", _case(lambda c: c.randn(127, 256), dim=1, keepdim=True),
             dist="normal"),
        Case("normal_pop", "small", _case(lambda c: c.randn(128, 256), dim=1, correction=0), dist="normal"),
        Case("normal_3d_tuple_out", "small",
             _case(lambda c: c.randn(8, 17, 33), dim=(0, 2), correction=2, with_out=True), dist="normal"),
        Case("uniform_offset", "small", _case(lambda c: c.uniform(61, 333, low=0, high=4), dim=-1),
             dist="uniform"),
        Case("outliers_all", "small", _case(lambda c: c.outliers(64, 1001)), dist="outliers"),
        Case("outliers_rows", "small", _case(lambda c: c.outliers(64, 1001), dim=1), dist="outliers"),
        Case("f16_rows", "small", _case(lambda c: c.randn(61, 1000, dtype=F16), dim=1), dist="normal"),
        Case("bf16_cols", "small", _case(lambda c: c.randn(300, 77, dtype=BF16, std=3.0), dim=0),
             dist="normal"),
        Case("perf_rows_f32", "full", _case(lambda c: c.randn(8192, 8192), dim=-1), dist="normal"),
        Case("perf_cols_f32", "full", _case(lambda c: c.randn(16384, 4096), dim=0), dist="normal"),
        Case("perf_all_f32", "full", _case(lambda c: c.randn(64 * 1024 * 1024)), dist="normal"),
        Case("perf_rows_bf16", "full", _case(lambda c: c.randn(4096, 16384, dtype=BF16), dim=1),
             dist="normal"),
    ]


def cost(input, dim=None, correction=1, keepdim=False, out=None):
    n = input.numel()
    if dim is None:
        kept = 1
    else:
        kept = n
        for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
            kept //= max(input.shape[d], 1)
    return {"flops": 4 * n + 2 * kept, "bytes": (n + kept) * input.element_size()}
