import torch

from kbx_worker.casegen import Case


def asin(input_tensor):
    return torch.asin(input_tensor)


def _plain(make):
    return lambda c: ((make(c),), {})


def _near_one(c, n, dtype=torch.float32):
    """Values 1 - 10^-k with random sign, k in [0.5, 7]: the steep end of the domain."""
    k = c.uniform(n, low=0.5, high=7.0)
    sign = torch.where(c.bernoulli(n), 1.0, -1.0)
    return (sign * (1.0 - torch.pow(10.0, -k))).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("domain_edges_f32", "edge", _plain(lambda c: torch.tensor(
            [1.0, -1.0, 0.5, -0.5, 0.70710678, 1.0000001, -1.0000001, 2.0, 1e-30, -1e-30, 0.999999],
            device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=-1, high=1))),
        Case("tanh_normal_f32", "small", _plain(lambda c: torch.tanh(c.randn(1000, 37))), dist="normal"),
        Case("normal_f32_partly_outside", "small", _plain(lambda c: c.randn(3, 5, 1021, std=0.7)),
             dist="normal"),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(7919, low=-1, high=1)), dist="uniform"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=-1, high=1, dtype=torch.float16)),
             dist="uniform"),
        Case("near_one_f32", "small", _plain(lambda c: _near_one(c, 20011)), dist="near_one"),
        Case("tiny_f32", "small", _plain(lambda c: c.uniform(5003, low=-1e-3, high=1e-3)), dist="tiny"),
        Case("uniform_bf16", "small", _plain(lambda c: c.uniform(333, 65, low=-1, high=1, dtype=torch.bfloat16)),
             dist="uniform"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=-1, high=1)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=-1, high=1)), dist="uniform"),
        Case("perf_f16_64M", "full",
             _plain(lambda c: c.uniform(8192, 8192, low=-1, high=1, dtype=torch.float16)), dist="uniform"),
        Case("perf_f32_odd", "full", _plain(lambda c: c.uniform(12289, 3001, low=-1, high=1)), dist="uniform"),
    ]


def cost(input_tensor):
    n = input_tensor.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input_tensor.element_size()}
