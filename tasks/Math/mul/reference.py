import torch

from kbx_worker.casegen import Case


def mul(input, other, out=None):
    return torch.mul(input, other, out=out)


def _outer(c, dtype):
    """Every special value times every special value, as an (n, 1) and a (1, n) tensor."""
    s = c.special(dtype)
    return (s.reshape(-1, 1), s.reshape(1, -1)), {}


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def _complex(c, *shape):
    return torch.complex(c.randn(*shape), c.randn(*shape))


def _with_out(c):
    return (c.randn(257, 33), c.randn(257, 33)), {"out": c.randn(257, 33)}


def cases():
    return [
        Case("special_outer_f32", "edge", lambda c: _outer(c, torch.float32)),
        Case("special_outer_f16", "edge", lambda c: _outer(c, torch.float16)),
        Case("special_outer_bf16", "edge", lambda c: _outer(c, torch.bfloat16)),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 7), lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _pair(lambda c: c.randn(()), lambda c: c.randn(()))),
        Case("out_f32", "edge", _with_out, dist="normal"),
        Case("normal_f32", "small", _pair(lambda c: c.randn(1000, 37), lambda c: c.randn(1000, 37)),
             dist="normal"),
        Case("broadcast_col_row_f32", "small", _pair(lambda c: c.randn(257, 1), lambda c: c.randn(1, 61)),
             dist="normal"),
        Case("broadcast_3d_f32", "small", _pair(lambda c: c.randn(3, 5, 1021), lambda c: c.randn(5, 1)),
             dist="normal"),
        Case("python_scalar_f32", "small", _pair(lambda c: c.uniform(7919, low=-10, high=10), lambda c: 2.5),
             dist="uniform"),
        Case("outliers_f32", "small", _pair(lambda c: c.outliers(4099), lambda c: c.outliers(4099)),
             dist="outliers"),
        Case("uniform_f16", "small",
             _pair(lambda c: c.uniform(4097, low=-16, high=16, dtype=torch.float16),
                   lambda c: c.uniform(4097, low=-16, high=16, dtype=torch.float16)), dist="uniform"),
        Case("outliers_bf16", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=torch.bfloat16),
                   lambda c: c.outliers(333, 65, dtype=torch.bfloat16)), dist="outliers"),
        Case("int32_wrap", "small",
             _pair(lambda c: c.randint(-2**31, 2**31 - 1, 61, 67, dtype=torch.int32),
                   lambda c: c.randint(-70000, 70000, 61, 67, dtype=torch.int32)), dist="uniform"),
        Case("int32_times_f32", "small",
             _pair(lambda c: c.randint(-100, 100, 2053, dtype=torch.int32), lambda c: c.randn(2053)),
             dist="normal"),
        Case("complex64", "small", _pair(lambda c: _complex(c, 1031), lambda c: _complex(c, 1031)),
             dist="normal"),
        Case("perf_f32_64M", "full", _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192, 8192)),
             dist="normal"),
        Case("perf_f32_64M_col_broadcast", "full",
             _pair(lambda c: c.randn(8192, 8192), lambda c: c.randn(8192, 1)), dist="normal"),
        Case("perf_bf16_64M", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=torch.bfloat16),
                   lambda c: c.randn(8192, 8192, dtype=torch.bfloat16)), dist="normal"),
        Case("perf_f16_odd", "full",
             _pair(lambda c: c.randn(12289, 3001, dtype=torch.float16),
                   lambda c: c.randn(12289, 3001, dtype=torch.float16)), dist="normal"),
    ]


def cost(input, other, out=None):
    if isinstance(other, torch.Tensor):
        n = torch.broadcast_shapes(input.shape, other.shape).numel()
        read = input.numel() * input.element_size() + other.numel() * other.element_size()
    else:
        n = input.numel()
        read = input.numel() * input.element_size()
    dtype = torch.result_type(input, other)
    flops = 6 * n if dtype.is_complex else n
    return {"flops": flops, "bytes": read + n * dtype.itemsize}
