import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def mse_loss(input, target, reduction="mean"):
    return F.mse_loss(input, target, reduction=reduction)


def _pair(make_a, make_b, **kwargs):
    return lambda c: ((make_a(c), make_b(c)), kwargs)


def _special_pairs(dtype, inf=True, nan=True, **kwargs):
    def make(c):
        s = c.special(dtype, inf=inf, nan=nan)
        n = s.numel()
        return (s[:, None].expand(n, n).contiguous(), s[None, :].expand(n, n).contiguous()), kwargs
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_pairs_none_f32", "edge", _special_pairs(f32, reduction="none")),
        Case("special_pairs_none_bf16", "edge", _special_pairs(bf16, reduction="none")),
        Case("finite_pairs_mean_f32", "edge", _special_pairs(f32, inf=False, nan=False)),
        Case("moderate_pairs_sum_f16", "edge",
             _pair(lambda c: c.special(f16, inf=False, nan=False)[2:7], lambda c: c.randn(5, dtype=f16),
                   reduction="sum")),
        Case("empty_mean_f32", "edge", _pair(lambda c: c.randn(0, 3), lambda c: c.randn(0, 3))),
        Case("empty_sum_f32", "edge", _pair(lambda c: c.randn(0), lambda c: c.randn(0), reduction="sum")),
        Case("zero_dim_f32", "edge", _pair(lambda c: c.randn(()), lambda c: c.randn(()))),
        Case("normal_f32_mean", "small", _pair(lambda c: c.randn(128, 256), lambda c: c.randn(128, 256)),
             dist="normal"),
        Case("normal_f16_mean", "small", _pair(lambda c: c.randn(1000, 37, dtype=f16),
                                               lambda c: c.randn(1000, 37, dtype=f16)), dist="normal"),
        Case("normal_bf16_sum", "small", _pair(lambda c: c.randn(3, 5, 1021, dtype=bf16),
                                               lambda c: c.randn(3, 5, 1021, dtype=bf16), reduction="sum"),
             dist="normal"),
        Case("outliers_f32_sum", "small", _pair(lambda c: c.outliers(77, 129), lambda c: c.outliers(77, 129),
                                                reduction="sum"), dist="outliers"),
        Case("outliers_bf16_mean", "small", _pair(lambda c: c.outliers(333, 65, dtype=bf16),
                                                  lambda c: c.outliers(333, 65, dtype=bf16)), dist="outliers"),
        Case("uniform_f16_none", "small",
             _pair(lambda c: c.uniform(4097, low=-3, high=3, dtype=f16),
                   lambda c: c.uniform(4097, low=-3, high=3, dtype=f16), reduction="none"), dist="uniform"),
        Case("uniform_f32_mean_odd", "small", _pair(lambda c: c.uniform(61, 7, 131), lambda c: c.uniform(61, 7, 131)),
             dist="uniform"),
        Case("perf_f32_mean", "full", _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192, 8192)),
             dist="normal"),
        Case("perf_bf16_none", "full", _pair(lambda c: c.randn(8192, 8192, dtype=bf16),
                                             lambda c: c.randn(8192, 8192, dtype=bf16), reduction="none"),
             dist="normal"),
        Case("perf_f16_mean", "full", _pair(lambda c: c.randn(16384, 8192, dtype=f16),
                                            lambda c: c.randn(16384, 8192, dtype=f16)), dist="normal"),
        Case("perf_f32_sum_odd", "full", _pair(lambda c: c.randn(12289, 3001), lambda c: c.randn(12289, 3001),
                                               reduction="sum"), dist="normal"),
    ]


def cost(input, target, reduction="mean"):
    n = input.numel()
    out = n if reduction == "none" else 1
    return {"flops": 3 * n, "bytes": (2 * n + out) * input.element_size()}
