import torch

from kbx_worker.casegen import Case

DT = torch.float16


def matmul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.matmul(input, other)


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape, dtype=DT)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=DT)
    if dist == "outliers":
        return c.outliers(*shape, dtype=DT, scale=20.0)
    raise ValueError(dist)


def _make(dist, a_shape, b_shape):
    return lambda c: ((_draw(c, dist, *a_shape), _draw(c, dist, *b_shape)), {})


def _outer_special(c):
    """K = 1: every output is one product of two special values (extremes overflow to inf,
    subnormals, signed zeros); no accumulation order is involved."""
    s = c.finite_special(DT)
    return (s.reshape(-1, 1), s.flip(0).reshape(1, -1)), {}


def cases():
    return [
        Case("outer_special", "edge", _outer_special),
        Case("vec_mat", "edge", _make("normal", (128,), (128, 96))),
        Case("mat_vec", "edge", _make("normal", (40, 70), (70,))),
        Case("vec_vec", "edge", _make("normal", (257,), (257,))),
        Case("empty_k", "edge", _make("normal", (5, 0), (0, 7))),
        Case("normal_2d", "small", _make("normal", (64, 128), (128, 96)), dist="normal"),
        Case("uniform_3d_batch", "small", _make("uniform", (4, 33, 70), (4, 70, 29)),
             dist="uniform"),
        Case("normal_broadcast_batch", "small", _make("normal", (2, 1, 20, 30), (3, 30, 17)),
             dist="normal"),
        Case("outliers_2d", "small", _make("outliers", (63, 127), (127, 65)), dist="outliers"),
        Case("uniform_3d_by_2d", "small", _make("uniform", (3, 50, 40), (40, 61)),
             dist="uniform"),
        Case("perf_4096", "full", _make("normal", (4096, 4096), (4096, 4096)), dist="normal"),
        Case("perf_8192", "full", _make("normal", (8192, 8192), (8192, 8192)), dist="normal"),
        Case("perf_batched_32x2048", "full", _make("uniform", (32, 2048, 2048), (32, 2048, 2048)),
             dist="uniform"),
        Case("perf_odd", "full", _make("normal", (4097, 3001), (3001, 5003)), dist="normal"),
    ]


def cost(input, other):
    out = torch.matmul(input.new_empty(input.shape, device="meta"),
                       other.new_empty(other.shape, device="meta"))
    k = input.shape[-1]
    elems = input.numel() + other.numel() + out.numel()
    return {"flops": 2 * out.numel() * k, "bytes": elems * input.element_size()}
