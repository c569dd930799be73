import torch

from kbx_worker.casegen import Case


def sqrt_tanh(input, out=None):
    root = torch.sqrt(input)
    root = torch.where(input < 0, torch.full_like(root, float("nan")), root)
    if out is None:
        return torch.tanh(root)
    return torch.tanh(root, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _tiny(c, *shape, dtype=torch.float32):
    return torch.pow(10.0, c.uniform(*shape, low=-30, high=-2)).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0, high=4))),
        Case("out_f32", "edge", _into_out(lambda c: c.uniform(257, 33, low=0, high=20)), dist="uniform"),
        Case("abs_normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=4.0).abs()), dist="normal"),
        Case("signed_normal_f32", "small", _plain(lambda c: c.randn(3, 5, 1021, std=4.0)), dist="normal"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=0, high=30, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16).abs()),
             dist="outliers"),
        Case("tiny_f32", "small", _plain(lambda c: _tiny(c, 7919)), dist="tiny"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=0, high=20)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=0, high=20)), dist="uniform"),
        Case("perf_bf16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=0, high=20, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd", "full",
             _plain(lambda c: c.uniform(12289, 3001, low=0, high=20, dtype=torch.float16)), dist="uniform"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 25 * n, "bytes": 2 * n * input.element_size()}
