import torch

from kbx_worker.casegen import Case

DT = torch.bfloat16


def mul_bf16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.mul(input, other)


def _outer(c):
    """Every special value times every special value, as an (n, 1) and a (1, n) tensor."""
    s = c.special(DT)
    return (s.reshape(-1, 1), s.reshape(1, -1)), {}


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def cases():
    return [
        Case("special_outer", "edge", _outer),
        Case("fixed_broadcast", "edge", lambda c: ((
            torch.tensor([[1.0, 2.0, 3.0]], dtype=DT, device=c.device),
            torch.tensor([10.0, 0.0, -10.0], dtype=DT, device=c.device)), {})),
        Case("empty", "edge", _pair(lambda c: c.randn(0, 7, dtype=DT), lambda c: c.randn(0, 7, dtype=DT))),
        Case("scalar", "edge", _pair(lambda c: c.randn((), dtype=DT), lambda c: c.randn((), dtype=DT))),
        Case("normal", "small", _pair(lambda c: c.randn(1000, 37, dtype=DT), lambda c: c.randn(1000, 37, dtype=DT)),
             dist="normal"),
        Case("uniform_3d", "small",
             _pair(lambda c: c.uniform(3, 5, 1021, low=-16, high=16, dtype=DT),
                   lambda c: c.uniform(3, 5, 1021, low=-16, high=16, dtype=DT)), dist="uniform"),
        Case("outliers", "small",
             _pair(lambda c: c.outliers(333, 65, dtype=DT, scale=100.0),
                   lambda c: c.outliers(333, 65, dtype=DT, scale=100.0)), dist="outliers"),
        Case("broadcast_row", "small", _pair(lambda c: c.randn(257, 61, dtype=DT), lambda c: c.randn(61, dtype=DT)),
             dist="normal"),
        Case("broadcast_col", "small", _pair(lambda c: c.randn(257, 1, dtype=DT), lambda c: c.randn(1, 127, dtype=DT)),
             dist="normal"),
        Case("perf_64M", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=DT), lambda c: c.randn(8192, 8192, dtype=DT)),
             dist="normal"),
        Case("perf_16M", "full",
             _pair(lambda c: c.randn(4096, 4096, dtype=DT), lambda c: c.randn(4096, 4096, dtype=DT)),
             dist="normal"),
        Case("perf_64M_row_broadcast", "full",
             _pair(lambda c: c.randn(8192, 8192, dtype=DT), lambda c: c.randn(8192, dtype=DT)), dist="normal"),
        Case("perf_odd", "full",
             _pair(lambda c: c.randn(12289, 3001, dtype=DT), lambda c: c.randn(12289, 3001, dtype=DT)), dist="normal"),
    ]


def cost(input, other):
    n = torch.broadcast_shapes(input.shape, other.shape).numel()
    return {"flops": n, "bytes": (input.numel() + other.numel() + n) * DT.itemsize}
