import torch

from kbx_worker.casegen import Case


def bessel_j1(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.special.bessel_j1(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _tiny(c, n):
    mag = torch.pow(10.0, c.uniform(n, low=-37, high=-2))
    return mag * torch.where(c.bernoulli(n), 1.0, -1.0)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32, inf=False))),
        Case("zeros_of_j1_f32", "edge", _plain(lambda c: torch.tensor(
            [3.8317060, 7.0155867, 10.1734681, 13.3236919, -3.8317060, 5.0, 5.0001, 25.0, 1000.0],
            device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.randn(()))),
        Case("out_f32", "edge", _into_out(lambda c: c.randn(257, 33, std=5.0)), dist="normal"),
        Case("normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=5.0)), dist="normal"),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=-30, high=30)), dist="uniform"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919, scale=100.0)), dist="outliers"),
        Case("tiny_f32", "small", _plain(lambda c: _tiny(c, 4099)), dist="tiny"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096, std=5.0)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=5.0)), dist="normal"),
        Case("perf_f32_odd", "full", _plain(lambda c: c.uniform(12289, 3001, low=-30, high=30)), dist="uniform"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 50 * n, "bytes": 2 * n * input.element_size()}
