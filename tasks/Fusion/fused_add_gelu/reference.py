import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_add_gelu(input, other, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError("approximate must be 'none' or 'tanh'")
    result = F.gelu(torch.add(input, other, alpha=alpha), approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _pair(make_a, make_b, **kwargs):
    return lambda c: ((make_a(c), make_b(c)), kwargs)


def _with_out(shape, dtype, make_a, make_b, **kwargs):
    def make(c):
        a, b = make_a(c), make_b(c)
        out = c.randn(*shape, dtype=dtype)  # stale contents; the call must overwrite them
        return (a, b), dict(kwargs, out=out)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        # finite specials (F.gelu(+-inf) is NaN on the CPU), broadcast against a small random row
        Case("special_f32", "edge",
             _pair(lambda c: c.special(f32, inf=False)[:, None], lambda c: c.randn(1, 5))),
        Case("special_f16_tanh_scalar", "edge",
             _pair(lambda c: c.special(f16, inf=False), lambda c: 0.5, alpha=-2, approximate="tanh")),
        Case("special_bf16", "edge",
             _pair(lambda c: c.special(bf16, inf=False)[:, None], lambda c: c.randn(3, dtype=bf16), alpha=0.5)),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 7), lambda c: c.randn(0, 7))),
        Case("zero_dim_f32_tanh", "edge", _pair(lambda c: c.randn(()), lambda c: c.randn(()), approximate="tanh")),
        Case("normal_f32", "small", _pair(lambda c: c.randn(1000, 37), lambda c: c.randn(1000, 37)),
             dist="normal"),
        Case("normal_f32_tanh_alpha", "small",
             _pair(lambda c: c.randn(255, 257), lambda c: c.randn(255, 257), alpha=0.5, approximate="tanh"),
             dist="normal"),
        Case("uniform_f16", "small",
             _pair(lambda c: c.uniform(4097, low=-6, high=6, dtype=f16),
                   lambda c: c.uniform(4097, low=-6, high=6, dtype=f16), alpha=-1), dist="uniform"),
        Case("outliers_bf16_bias_tanh", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=bf16), lambda c: c.outliers(65, dtype=bf16),
                   approximate="tanh"), dist="outliers"),
        Case("outliers_f32_scalar", "small", _pair(lambda c: c.outliers(7919), lambda c: -0.75, alpha=2),
             dist="outliers"),
        Case("normal_f32_out", "small",
             _with_out((129, 257), f32, lambda c: c.randn(129, 257), lambda c: c.randn(129, 257), alpha=2),
             dist="normal"),
        Case("uniform_bf16_out_bias_tanh", "small",
             _with_out((61, 263), bf16, lambda c: c.uniform(61, 263, low=-4, high=4, dtype=bf16),
                       lambda c: c.uniform(263, low=-1, high=1, dtype=bf16), approximate="tanh"), dist="uniform"),
        Case("perf_f32_64M", "full", _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192, 8192)),
             dist="normal"),
        Case("perf_bf16_bias_tanh", "full",
             _pair(lambda c: c.randn(16384, 8192, dtype=bf16), lambda c: c.randn(8192, dtype=bf16),
                   approximate="tanh"), dist="normal"),
        Case("perf_f16_alpha", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=f16), lambda c: c.randn(8192, 8192, dtype=f16), alpha=0.5),
             dist="normal"),
        Case("perf_f32_odd_out", "full",
             _with_out((12289, 3001), f32, lambda c: c.randn(12289, 3001), lambda c: c.randn(12289, 3001),
                       approximate="tanh"), dist="normal"),
    ]


def cost(input, other, alpha=1, approximate="none", out=None):
    shape = torch.broadcast_shapes(input.shape, other.shape if isinstance(other, torch.Tensor) else ())
    n = 1
    for s in shape:
        n *= s
    es = input.element_size()
    nbytes = (input.numel() + n) * es
    if isinstance(other, torch.Tensor):
        nbytes += other.numel() * other.element_size()
    return {"flops": 22 * n, "bytes": nbytes}
