import torch

from kbx_worker.casegen import Case


def signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor):
    signbit_result = torch.signbit(input)
    bitwise_and_result = input.to(torch.int8) & other.to(torch.int8)
    return signbit_result, bitwise_and_result


def _mask(c, kind, *shape):
    if kind == "bool":
        return c.bernoulli(*shape)
    return c.randint(-128, 128, *shape, dtype=torch.int8)


def _build(c, make_x, kind):
    """(input, other) with other an int8 or bool mask of input's shape."""
    x = make_x(c)
    return (x, _mask(c, kind, *x.shape)), {}


def _in_range(t):
    """Clamp float32 values into (-129, 128), where the conversion to int8 is defined."""
    return t.clamp(-128.99, 127.99)


def _edge(c, dtype):
    vals = [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.0, -1.0, 1.5, -1.7, 127.0, -128.0, 127.5, -128.5, 1e-30, -1e-30]
    return torch.tensor(vals, dtype=dtype, device=c.device)


def _integers(c, n, dtype=torch.float32):
    """Integer-valued floats (exact after conversion), including signed zeros."""
    v = c.randint(-128, 128, n).to(torch.float32)
    v = torch.where(v == 0, torch.where(c.bernoulli(n), 0.0, -0.0), v)
    return v.to(dtype)


def cases():
    return [
        Case("edge_f32_int8", "edge", lambda c: _build(c, lambda c: _edge(c, torch.float32), "int8")),
        Case("edge_f16_bool", "edge", lambda c: _build(c, lambda c: _edge(c, torch.float16), "bool")),
        Case("edge_bf16_int8", "edge", lambda c: _build(c, lambda c: _edge(c, torch.bfloat16), "int8")),
        Case("empty_f32", "edge", lambda c: _build(c, lambda c: c.randn(0, 7), "int8")),
        Case("normal_f32_int8", "small", lambda c: _build(c, lambda c: _in_range(c.randn(1000, 37, std=30.0)), "int8"),
             dist="normal"),
        Case("normal_f32_bool", "small", lambda c: _build(c, lambda c: c.randn(3, 5, 1021), "bool"), dist="normal"),
        Case("uniform_f16_int8", "small",
             lambda c: _build(c, lambda c: c.uniform(4097, low=-128, high=127.9, dtype=torch.float16), "int8"),
             dist="uniform"),
        Case("integers_bf16_int8", "small", lambda c: _build(c, lambda c: _integers(c, 21645, torch.bfloat16), "int8"),
             dist="integers"),
        Case("integers_f32_bool", "small", lambda c: _build(c, lambda c: _integers(c, 7919), "bool"), dist="integers"),
        Case("perf_f32_64M", "full", lambda c: _build(c, lambda c: c.uniform(8192, 8192, low=-128, high=127.9), "int8"),
             dist="uniform"),
        Case("perf_bf16_64M", "full",
             lambda c: _build(c, lambda c: c.uniform(8192, 8192, low=-128, high=127, dtype=torch.bfloat16), "int8"),
             dist="uniform"),
        Case("perf_f16_odd_bool", "full",
             lambda c: _build(c, lambda c: c.uniform(12289, 3001, low=-128, high=127.9, dtype=torch.float16), "bool"),
             dist="uniform"),
    ]


def cost(input, other):
    n = input.numel()
    return {"flops": 2 * n, "bytes": n * (input.element_size() + other.element_size() + 2)}
