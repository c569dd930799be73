import math

import torch

from kbx_worker.casegen import Case


def fused_mv_sigmoid_sub(input, vec, other, alpha=1, *, out=None):
    z = torch.mv(input, vec)
    s = torch.sigmoid(z)
    y = torch.sub(s, other, alpha=alpha)
    if out is not None:
        out.copy_(y)
        return out
    return y


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(n, m, dtype=torch.float32, dist="normal", other="tensor", with_out=False, spread=2.0,
          **kwargs):
    """input (n, m), vec (m) scaled so that z has a standard deviation of about spread;
    other: 'tensor' (n values), 'one' (a 1-element tensor) or a Python number."""
    def make(c):
        a = _draw(c, dist, (n, m), dtype)
        v = _draw(c, "normal", (m,), dtype, spread / math.sqrt(max(m, 1)))
        if other == "tensor":
            o = _draw(c, "normal", (n,), dtype, 0.5)
        elif other == "one":
            o = _draw(c, "normal", (1,), dtype)
        else:
            o = other
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.full((n,), -5.0, dtype=dtype, device=c.device)
        return (a, v, o), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("empty_rows_f32", "edge", _make(0, 16, other=0.5)),
        Case("empty_cols_f32", "edge", _make(9, 0)),
        Case("saturated_f32", "edge", _make(65, 40, spread=60.0, alpha=2)),
        Case("scalar_other_f32", "edge", _make(33, 17, other=0.5, alpha=-1.5)),
        Case("out_f32", "edge", _make(31, 29, with_out=True), dist="normal"),
        Case("normal_f32", "small", _make(1000, 37), dist="normal"),
        Case("normal_f32_one_other", "small", _make(301, 199, other="one", alpha=0.5),
             dist="normal"),
        Case("uniform_f16", "small", _make(257, 128, dtype=f16, dist="uniform"), dist="uniform"),
        Case("uniform_bf16_out", "small", _make(97, 333, dtype=bf16, dist="uniform",
                                                with_out=True, alpha=2), dist="uniform"),
        Case("outliers_f32", "small", _make(129, 255, dist="outliers"), dist="outliers"),
        Case("outliers_bf16", "small", _make(511, 64, dtype=bf16, dist="outliers", other=-0.25),
             dist="outliers"),
        Case("perf_f32_16384x16384", "full", _make(16384, 16384), dist="normal"),
        Case("perf_f32_8192x8192_out", "full", _make(8192, 8192, with_out=True, alpha=0.5),
             dist="normal"),
        Case("perf_bf16_32768x8192", "full", _make(32768, 8192, dtype=bf16), dist="normal"),
        Case("perf_f16_odd", "full", _make(12289, 6001, dtype=f16, dist="uniform", other=0.25),
             dist="uniform"),
    ]


def cost(input, vec, other, alpha=1, *, out=None):
    n, m = input.shape
    size = input.element_size()
    other_n = other.numel() if isinstance(other, torch.Tensor) else 0
    return {"flops": 2 * n * m + 6 * n, "bytes": (n * m + m + other_n + n) * size}
