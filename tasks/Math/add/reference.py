import torch

from kbx_worker.casegen import Case


def add(input, other, alpha=1, out=None):
    if out is not None:
        return torch.add(input, other, alpha=alpha, out=out)
    return torch.add(input, other, alpha=alpha)


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
        # every pair of special values, through broadcasting of both operands
        Case("special_pairs_f32", "edge",
             _pair(lambda c: c.special(f32)[:, None], lambda c: c.special(f32)[None, :])),
        Case("special_pairs_f16_alpha", "edge",
             _pair(lambda c: c.special(f16)[:, None], lambda c: c.special(f16)[None, :], alpha=2)),
        Case("special_bf16_scalar", "edge",
             _pair(lambda c: c.special(bf16), lambda c: 1.5, alpha=-1)),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 5), lambda c: c.randn(0, 5))),
        Case("zero_dim_f32", "edge", _pair(lambda c: c.randn(()), lambda c: c.randn(()), alpha=3)),
        Case("normal_f32", "small", _pair(lambda c: c.randn(1000, 37), lambda c: c.randn(1000, 37)),
             dist="normal"),
        Case("normal_f32_alpha", "small",
             _pair(lambda c: c.randn(3, 5, 1021), lambda c: c.randn(3, 5, 1021), alpha=0.5),
             dist="normal"),
        Case("uniform_f16_alpha", "small",
             _pair(lambda c: c.uniform(4097, low=-4, high=4, dtype=f16),
                   lambda c: c.uniform(4097, low=-4, high=4, dtype=f16), alpha=-2.0),
             dist="uniform"),
        Case("outliers_bf16_rowbcast", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=bf16), lambda c: c.outliers(65, dtype=bf16)),
             dist="outliers"),
        Case("outliers_f32_colbcast", "small",
             _pair(lambda c: c.outliers(77, 1, 3), lambda c: c.outliers(77, 129, 3), alpha=0.25),
             dist="outliers"),
        Case("normal_f32_scalar", "small", _pair(lambda c: c.randn(257, 129), lambda c: 3.25, alpha=2),
             dist="normal"),
        Case("normal_f32_out", "small",
             _with_out((129, 257), f32, lambda c: c.randn(129, 257), lambda c: c.randn(129, 257),
                       alpha=-1.5), dist="normal"),
        Case("uniform_bf16_out_bcast", "small",
             _with_out((61, 263), bf16, lambda c: c.uniform(61, 263, low=-1, high=1, dtype=bf16),
                       lambda c: c.uniform(263, low=-1, high=1, dtype=bf16)), dist="uniform"),
        Case("perf_f32_16M", "full", _pair(lambda c: c.randn(4096, 4096), lambda c: c.randn(4096, 4096)),
             dist="normal"),
        Case("perf_bf16_64M_alpha", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=bf16), lambda c: c.randn(8192, 8192, dtype=bf16),
                   alpha=0.5), dist="normal"),
        Case("perf_f16_64M_bias", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=f16), lambda c: c.randn(8192, dtype=f16)),
             dist="normal"),
        Case("perf_f32_odd_out", "full",
             _with_out((12289, 3001), f32, lambda c: c.randn(12289, 3001), lambda c: c.randn(12289, 3001)),
             dist="normal"),
    ]


def cost(input, other, alpha=1, out=None):
    shape = torch.broadcast_shapes(input.shape, other.shape if isinstance(other, torch.Tensor) else ())
    n = 1
    for s in shape:
        n *= s
    dtype = out.dtype if out is not None else torch.result_type(input, other)
    nbytes = input.numel() * input.element_size() + n * torch.empty((), dtype=dtype).element_size()
    if isinstance(other, torch.Tensor):
        nbytes += other.numel() * other.element_size()
    return {"flops": n * (1 if alpha == 1 else 2), "bytes": nbytes}
