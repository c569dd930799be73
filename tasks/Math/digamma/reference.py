import torch

from kbx_worker.casegen import Case


def digamma(input_tensor):
    return torch.special.digamma(input_tensor)


def _plain(make):
    return lambda c: ((make(c),), {})


def _negative_non_integers(c, n):
    """Negative values at least 0.1 away from the poles at the non-positive integers."""
    return -(c.randint(0, 20, n).to(torch.float32) + c.uniform(n, low=0.1, high=0.9))


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32, inf=False))),
        Case("known_values_f32", "edge", _plain(lambda c: torch.tensor(
            [1.0, 2.0, 0.5, 1.4616321, 10.0, 100.0, 1e6, 1e30, -0.5, -1.5, -1.0, -2.0], device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0.5, high=5))),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(1000, 37, low=0.01, high=30)), dist="uniform"),
        Case("lognormal_f32", "small", _plain(lambda c: torch.exp(c.randn(3, 5, 1021, std=4.0))), dist="lognormal"),
        Case("negative_f32", "small", _plain(lambda c: _negative_non_integers(c, 4099)), dist="negative"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919).abs() + 0.1), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=0.01, high=30)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=0.01, high=30)), dist="uniform"),
        Case("perf_f32_odd", "full", _plain(lambda c: torch.exp(c.randn(12289, 3001, std=2.0))), dist="lognormal"),
    ]


def cost(input_tensor):
    n = input_tensor.numel()
    return {"flops": 40 * n, "bytes": 2 * n * input_tensor.element_size()}
