import torch

from kbx_worker.casegen import Case


def fused_sum_std(input, dim=None, keepdim=False, dtype=None, correction=1, out=None):
    summed = input.sum(dim=dim, keepdim=keepdim, dtype=dtype)
    n = summed.numel()
    mean = summed.mean()
    var = ((summed - mean) ** 2).sum()
    if n > correction:
        std = (var / (n - correction)).sqrt()
    else:
        # KernelBenchX builds this zero on the CPU whatever the input's device; kbx keeps the device
        std = torch.zeros((), dtype=summed.dtype, device=summed.device)
    if out is not None:
        out.copy_(std)
        return out
    return std


def _make(make_input, out_dtype=None, **kwargs):
    def make(c):
        x = make_input(c)
        kw = dict(kwargs)
        if out_dtype is not None:
            kw["out"] = torch.full((), -5.0, dtype=out_dtype, device=c.device)
        return (x,), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("all_dims_f32", "edge", _make(lambda c: c.randn(33, 17))),
        Case("all_dims_corr0_f32", "edge", _make(lambda c: c.randn(5, 7), correction=0)),
        Case("two_sums_f32", "edge", _make(lambda c: c.randn(2, 9), dim=1)),
        Case("finite_special_rows_f32", "edge",
             _make(lambda c: c.finite_special(f32).reshape(3, 5) * 1e-20, dim=0)),
        Case("out_f32", "edge", _make(lambda c: c.randn(64, 31), out_dtype=f32, dim=0),
             dist="normal"),
        Case("normal_f32_dim1", "small", _make(lambda c: c.randn(257, 129), dim=1), dist="normal"),
        Case("normal_f32_dim0_keepdim", "small",
             _make(lambda c: c.randn(128, 255), dim=0, keepdim=True), dist="normal"),
        Case("uniform_f32_3d_dims", "small",
             _make(lambda c: c.uniform(9, 77, 31, low=-1.0, high=1.0), dim=(0, 2), correction=0),
             dist="uniform"),
        Case("uniform_bf16_to_f32", "small",
             _make(lambda c: c.uniform(301, 97, low=0.0, high=1.0, dtype=bf16), dim=1, dtype=f32),
             dist="uniform"),
        Case("outliers_f32_corr2", "small", _make(lambda c: c.outliers(127, 255), dim=-1,
                                                    correction=2), dist="outliers"),
        Case("normal_f16_out", "small",
             _make(lambda c: c.randn(513, 63, dtype=f16), out_dtype=f16, dim=1), dist="normal"),
        Case("perf_f32_rows_1G", "full", _make(lambda c: c.randn(16384, 16384), dim=1),
             dist="normal"),
        Case("perf_f32_cols_256M", "full", _make(lambda c: c.randn(8192, 8192), dim=0),
             dist="normal"),
        Case("perf_bf16_to_f32_3d", "full",
             _make(lambda c: c.uniform(64, 4096, 1024, low=-1, high=1, dtype=bf16),
                   dim=(0, 2), dtype=f32), dist="uniform"),
        Case("perf_f16_out", "full",
             _make(lambda c: c.randn(32768, 4096, dtype=f16, std=0.25), out_dtype=f16, dim=1),
             dist="normal"),
    ]


def cost(input, dim=None, keepdim=False, dtype=None, correction=1, out=None):
    n = input.numel()
    if dim is None:
        m = 1
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        reduced = 1
        for d in dims:
            reduced *= input.shape[d]
        m = n // max(1, reduced)
    return {"flops": n + 5 * m, "bytes": n * input.element_size() + 8}
