import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def mean(input_tensor, dim, keepdim=False, dtype=None, out=None):
    r = torch.mean(input_tensor, dim, keepdim=keepdim, dtype=dtype)
    if out is not None:
        out.copy_(r)
        return out
    return r


def _case(make_input, dim, with_out=False, **kwargs):
    def make(c):
        x = make_input(c)
        kw = dict(kwargs)
        if with_out:
            ref = torch.mean(x, dim, keepdim=kw.get("keepdim", False), dtype=kw.get("dtype"))
            kw["out"] = torch.zeros_like(ref)
        return (x, dim), kw
    return make


def _nonfinite_rows(c):
    x = c.randn(6, 33)
    x[0, 5] = float("inf")
    x[1, 7] = float("nan")
    x[2, 3] = float("-inf")
    x[3, 1] = float("inf")
    x[3, 9] = float("-inf")
    return x


def cases():
    return [
        Case("nonfinite_rows", "edge", _case(_nonfinite_rows, 1)),
        Case("empty_reduce", "edge", _case(lambda c: c.randn(3, 0), 1)),
        Case("empty_kept", "edge", _case(lambda c: c.randn(0, 9), 1, keepdim=True)),
        Case("length_one", "edge", _case(lambda c: c.randn(1), 0)),
        Case("int32_to_f32", "edge", _case(lambda c: c.randint(-1000, 1000, 45, 31, dtype=torch.int32), 0,
                                           dtype=F32)),
        Case("normal_dim0", "small", _case(lambda c: c.randn(128, 255), 0), dist="normal"),
        Case("normal_dim1_keep", "small", _case(lambda c: c.randn(127, 256), 1, keepdim=True), dist="normal"),
        Case("normal_3d_02", "small", _case(lambda c: c.randn(8, 17, 33), (0, 2)), dist="normal"),
        Case("normal_out", "small", _case(lambda c: c.randn(9, 7, 131), -1, with_out=True), dist="normal"),
        Case("uniform_neg_dims", "small", _case(lambda c: c.uniform(5, 6, 7, 61, low=-3, high=5), (-1, -3)),
             dist="uniform"),
        Case("outliers", "small", _case(lambda c: c.outliers(64, 1001), 1), dist="outliers"),
        Case("f16_rows", "small", _case(lambda c: c.randn(61, 1000, dtype=F16), 1), dist="normal"),
        Case("bf16_to_f32", "small", _case(lambda c: c.outliers(300, 77, dtype=BF16), 0, dtype=F32),
             dist="outliers"),
        Case("f16_to_f32_out", "small",
             _case(lambda c: c.uniform(40, 1025, low=0, high=2, dtype=F16), 1, keepdim=True, dtype=F32,
                   with_out=True), dist="uniform"),
        Case("perf_rows_f32", "full", _case(lambda c: c.randn(8192, 8192), -1), dist="normal"),
        Case("perf_cols_f32", "full", _case(lambda c: c.randn(16384, 4096), 0), dist="normal"),
        Case("perf_rows_bf16_acc32", "full", _case(lambda c: c.randn(4096, 16384, dtype=BF16), 1, dtype=F32),
             dist="normal"),
        Case("perf_nchw_spatial", "full", _case(lambda c: c.randn(32, 512, 3136), (0, 2)), dist="normal"),
    ]


def cost(input_tensor, dim, keepdim=False, dtype=None, out=None):
    n = input_tensor.numel()
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    kept = n
    for d in dims:
        kept //= max(input_tensor.shape[d], 1)
    out_es = torch.empty((), dtype=dtype or input_tensor.dtype).element_size()
    return {"flops": n + kept, "bytes": n * input_tensor.element_size() + kept * out_es}
