import torch

from kbx_worker.casegen import Case


def gammaln(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.special.gammaln(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _negative_non_integers(c, n):
    """Negative values at least 0.1 away from the poles at the non-positive integers."""
    return -(c.randint(0, 20, n).to(torch.float32) + c.uniform(n, low=0.1, high=0.9))


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("known_values_f32", "edge", _plain(lambda c: torch.tensor(
            [1.0, 2.0, 3.0, 0.5, 1.5, 10.0, 171.0, 172.0, 1e6, 1e30, -0.5, -2.5, -3.0],
            device=c.device))),
        Case("integers_f32", "edge", _plain(lambda c: torch.arange(1, 1001, device=c.device, dtype=torch.float32))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0.5, high=5))),
        Case("out_f32", "edge", _into_out(lambda c: c.uniform(257, 33, low=0.1, high=50)), dist="uniform"),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(1000, 37, low=0.01, high=50)), dist="uniform"),
        Case("lognormal_f32", "small", _plain(lambda c: torch.exp(c.randn(3, 5, 1021, std=5.0))), dist="lognormal"),
        Case("negative_f32", "small", _plain(lambda c: _negative_non_integers(c, 4099)), dist="negative"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919).abs() + 0.1), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.uniform(4096, 4096, low=0.01, high=50)), dist="uniform"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.uniform(8192, 8192, low=0.01, high=50)), dist="uniform"),
        Case("perf_f32_odd", "full", _plain(lambda c: torch.exp(c.randn(12289, 3001, std=3.0))), dist="lognormal"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 40 * n, "bytes": 2 * n * input.element_size()}
