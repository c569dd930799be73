import torch

from kbx_worker.casegen import Case

DT = torch.float16


def sigmoid_fp16(input: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(input)


def _one(make_input):
    return lambda c: ((make_input(c),), {})


def cases():
    return [
        Case("special", "edge", _one(lambda c: c.special(DT))),
        Case("empty", "edge", _one(lambda c: c.randn(0, 5, dtype=DT))),
        Case("scalar", "edge", _one(lambda c: c.randn((), dtype=DT))),
        Case("saturating", "edge", _one(lambda c: c.uniform(999, low=-100, high=100, dtype=DT))),
        Case("normal", "small", _one(lambda c: c.randn(1000, 37, dtype=DT)), dist="normal"),
        Case("normal_3d", "small", _one(lambda c: c.randn(3, 5, 1021, dtype=DT)), dist="normal"),
        Case("uniform", "small", _one(lambda c: c.uniform(4097, low=-8, high=8, dtype=DT)), dist="uniform"),
        Case("outliers", "small", _one(lambda c: c.outliers(333, 65, dtype=DT)), dist="outliers"),
        Case("perf_16M", "full", _one(lambda c: c.randn(4096, 4096, dtype=DT)), dist="normal"),
        Case("perf_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=DT)), dist="normal"),
        Case("perf_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=DT)), dist="normal"),
        Case("perf_long", "full", _one(lambda c: c.uniform(50331651, low=-4, high=4, dtype=DT)), dist="uniform"),
    ]


def cost(input):
    n = input.numel()
    return {"flops": 4 * n, "bytes": 2 * n * input.element_size()}
