import torch

from kbx_worker.casegen import Case


def floor(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.floor(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _halves(c, n, dtype=torch.float32):
    """Integers and half-integers of both signs, with some values near the float32 integer limit."""
    k = c.randint(-2000, 2000, n).to(torch.float32) / 2
    big = c.randint(-2**26, 2**26, n).to(torch.float32) + 0.5
    return torch.where(c.bernoulli(n, p=0.1), big, k).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("big_f32", "edge", _plain(lambda c: torch.tensor(
            [8388607.5, -8388607.5, 8388608.0, 2.5e9, -2.5e9, 1e20, -1e20, -0.5, 0.5, -1e-30],
            device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.randn((), std=10.0))),
        Case("out_f32", "edge", _into_out(lambda c: c.randn(257, 33, std=10.0)), dist="normal"),
        Case("normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=10.0)), dist="normal"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=-50, high=50, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16)),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(3, 5, 1021, scale=1e7)), dist="outliers"),
        Case("halves_f32", "small", _plain(lambda c: _halves(c, 7919)), dist="halves"),
        Case("int32", "small", _plain(lambda c: c.randint(-1000, 1000, 61, 509, dtype=torch.int32)),
             dist="uniform"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096, std=100.0)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=100.0)), dist="normal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=100.0, dtype=torch.bfloat16)),
             dist="normal"),
        Case("perf_f16_odd", "full", _plain(lambda c: c.randn(12289, 3001, std=100.0, dtype=torch.float16)),
             dist="normal"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": n, "bytes": 2 * n * input.element_size()}
