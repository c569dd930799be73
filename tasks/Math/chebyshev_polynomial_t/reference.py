import torch

from kbx_worker.casegen import Case


def chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor = None) -> torch.Tensor:
    result = torch.special.chebyshev_polynomial_t(input, n)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _degree(make, n):
    return lambda c: ((make(c), n), {})


def _with_out(c):
    x = c.uniform(257, 33, low=-1, high=1)
    return (x, 7), {"out": c.randn(x.shape)}


def _clamped_normal(c, *shape):
    """Normal values clamped to [-1, 1]: about a third sit exactly on +-1."""
    return c.randn(*shape).clamp(-1.0, 1.0)


def cases():
    return [
        Case("special_n3", "edge", _degree(lambda c: c.special(torch.float32, inf=False), 3)),
        Case("special_n10", "edge", _degree(lambda c: c.special(torch.float32, inf=False), 10)),
        Case("special_n0", "edge", _degree(lambda c: c.special(torch.float32, inf=False), 0)),
        Case("special_n1", "edge", _degree(lambda c: c.special(torch.float32, inf=False), 1)),
        Case("small_inputs_n2", "edge", _degree(lambda c: torch.tensor(
            [0.5, -0.5, 0.0, -1.0, -0.2, 1.0, 0.70710678], device=c.device), 2)),
        Case("empty_n5", "edge", _degree(lambda c: c.randn(0, 7), 5)),
        Case("scalar_n4", "edge", _degree(lambda c: c.uniform((), low=-1, high=1), 4)),
        Case("out_n7", "edge", _with_out, dist="uniform"),
        Case("uniform_n5", "small", _degree(lambda c: c.uniform(1000, 37, low=-1, high=1), 5), dist="uniform"),
        Case("uniform_n10", "small", _degree(lambda c: c.uniform(3, 5, 1021, low=-1, high=1), 10), dist="uniform"),
        Case("uniform_n25", "small", _degree(lambda c: c.uniform(4099, low=-1, high=1), 25), dist="uniform"),
        Case("clamped_normal_n5", "small", _degree(lambda c: _clamped_normal(c, 61, 67), 5), dist="normal"),
        Case("clamped_normal_n10", "small", _degree(lambda c: _clamped_normal(c, 4097), 10), dist="normal"),
        Case("outside_n4", "small", _degree(lambda c: c.uniform(2053, low=-3, high=3), 4), dist="uniform"),
        Case("outliers_n2", "small", _degree(lambda c: c.outliers(7919), 2), dist="outliers"),
        Case("perf_n10_64M", "full", _degree(lambda c: c.uniform(8192, 8192, low=-1, high=1), 10), dist="uniform"),
        Case("perf_n5_16M", "full", _degree(lambda c: c.uniform(4096, 4096, low=-1, high=1), 5), dist="uniform"),
        Case("perf_n25_odd", "full", _degree(lambda c: c.uniform(12289, 3001, low=-1, high=1), 25), dist="uniform"),
    ]


def cost(input, n, out=None):
    k = input.numel()
    return {"flops": max(2 * n, 20) * k, "bytes": 2 * k * input.element_size()}
