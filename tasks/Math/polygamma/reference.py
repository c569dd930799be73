import torch

from kbx_worker.casegen import Case


def polygamma(n, input, *, out=None):
    if not isinstance(n, int) or n < 0:
        raise ValueError("n must be a non-negative integer.")
    result = torch.special.polygamma(n, torch.as_tensor(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


def _order(n, make):
    return lambda c: ((n, make(c)), {})


def _edge_values(c):
    """Positive special values, the pole at zero (both signs) and NaN."""
    fi = torch.finfo(torch.float32)
    vals = [0.0, -0.0, 1.0, 0.5, 2.0, 3.0, 1e-3, 1e-10, fi.tiny, fi.eps, 10.0, 1e4, 1e10, fi.max, float("nan")]
    return torch.tensor(vals, device=c.device)


def _negative_non_integers(c, n):
    """Negative values at least 0.2 away from the poles at the non-positive integers."""
    return -(c.randint(0, 8, n).to(torch.float32) + c.uniform(n, low=0.2, high=0.8))


def _with_out(c):
    x = c.uniform(257, 33, low=0.1, high=10)
    return (2, x), {"out": c.randn(x.shape)}


def cases():
    return [
        Case("edge_n0", "edge", _order(0, _edge_values)),
        Case("edge_n1", "edge", _order(1, _edge_values)),
        Case("edge_n2", "edge", _order(2, _edge_values)),
        Case("edge_n3", "edge", _order(3, _edge_values)),
        Case("edge_n4", "edge", _order(4, _edge_values)),
        Case("empty_n1", "edge", _order(1, lambda c: c.randn(0, 7))),
        Case("scalar_n1", "edge", _order(1, lambda c: c.uniform((), low=0.5, high=5))),
        Case("out_n2", "edge", _with_out, dist="uniform"),
        Case("abs_normal_n1", "small", _order(1, lambda c: c.randn(1000, 37).abs() + 0.1), dist="normal"),
        Case("abs_normal_n2", "small", _order(2, lambda c: c.randn(3, 5, 1021).abs() + 0.1), dist="normal"),
        Case("uniform_n0", "small", _order(0, lambda c: c.uniform(4099, low=0.05, high=30)), dist="uniform"),
        Case("uniform_n3", "small", _order(3, lambda c: c.uniform(4099, low=0.05, high=30)), dist="uniform"),
        Case("lognormal_n4", "small", _order(4, lambda c: torch.exp(c.randn(2053, std=2.0))), dist="lognormal"),
        Case("outliers_n1", "small", _order(1, lambda c: c.outliers(7919).abs() + 0.1), dist="outliers"),
        Case("negative_n1", "small", _order(1, lambda c: _negative_non_integers(c, 2053)), dist="negative"),
        Case("perf_n1_16M", "full", _order(1, lambda c: c.uniform(4096, 4096, low=0.05, high=30)), dist="uniform"),
        Case("perf_n2_64M", "full", _order(2, lambda c: c.uniform(8192, 8192, low=0.05, high=30)), dist="uniform"),
        Case("perf_n3_odd", "full", _order(3, lambda c: torch.exp(c.randn(12289, 3001))), dist="lognormal"),
    ]


def cost(n, input, *, out=None):
    k = input.numel()
    return {"flops": 100 * k, "bytes": 2 * k * input.element_size()}
