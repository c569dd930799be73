import torch

from kbx_worker.casegen import Case


def zeta(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    return torch.special.zeta(input, other, out=out)


_X = [1.0, 0.5, -2.0, 1.5, 2.0, 2.5, 3.0, 10.0, 50.0, float("nan")]
_Q = [0.0, -1.0, -2.5, 1e-3, 0.5, 1.0, 2.0, 10.0, 1e6, float("nan")]


def _outer(c):
    """Every edge value of x against every edge value of q, as a (10, 1) and a (1, 10) tensor."""
    x = torch.tensor(_X, device=c.device).reshape(-1, 1)
    q = torch.tensor(_Q, device=c.device).reshape(1, -1)
    return (x, q), {}


def _pair(make_x, make_q):
    return lambda c: ((make_x(c), make_q(c)), {})


def _with_out(c):
    x, q = c.uniform(257, 33, low=1.5, high=6), c.uniform(257, 33, low=0.5, high=5)
    return (x, q), {"out": c.randn(257, 33)}


def cases():
    return [
        Case("edge_outer", "edge", _outer),
        Case("riemann_f32", "edge", _pair(lambda c: torch.tensor([2.0, 3.0, 4.0, 1.0001, 20.0], device=c.device),
                                          lambda c: torch.ones(5, device=c.device))),
        Case("empty_f32", "edge", _pair(lambda c: c.randn(0, 7), lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge",
             _pair(lambda c: c.uniform((), low=2, high=4), lambda c: c.uniform((), low=1, high=3))),
        Case("out_f32", "edge", _with_out, dist="uniform"),
        Case("abs_normal_f32", "small",
             _pair(lambda c: c.randn(1000, 37).abs() + 2.0, lambda c: c.randn(1000, 37).abs() + 1.0), dist="normal"),
        Case("uniform_f32", "small",
             _pair(lambda c: c.uniform(3, 5, 1021, low=1.05, high=12),
                   lambda c: c.uniform(3, 5, 1021, low=0.05, high=20)),
             dist="uniform"),
        Case("broadcast_x_f32", "small",
             _pair(lambda c: c.uniform(61, 1, low=1.1, high=5), lambda c: c.uniform(129, low=0.1, high=10)),
             dist="uniform"),
        Case("outliers_f32", "small",
             _pair(lambda c: c.outliers(7919, scale=10.0).abs() + 2.0,
                   lambda c: c.outliers(7919, scale=10.0).abs() + 1.0),
             dist="outliers"),
        Case("perf_f32_16M", "full",
             _pair(lambda c: c.uniform(4096, 4096, low=1.1, high=8), lambda c: c.uniform(4096, 4096, low=0.1, high=10)),
             dist="uniform"),
        Case("perf_f32_64M_broadcast_x", "full",
             _pair(lambda c: c.uniform(8192, 1, low=1.1, high=8), lambda c: c.uniform(8192, 8192, low=0.1, high=10)),
             dist="uniform"),
        Case("perf_f32_odd", "full",
             _pair(lambda c: c.randn(12289, 3001).abs() + 2.0, lambda c: c.randn(12289, 3001).abs() + 1.0),
             dist="normal"),
    ]


def cost(input, other, out=None):
    n = torch.broadcast_shapes(input.shape, other.shape).numel()
    read = (input.numel() + other.numel()) * input.element_size()
    return {"flops": 150 * n, "bytes": read + n * input.element_size()}
