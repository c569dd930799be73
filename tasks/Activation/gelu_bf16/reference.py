import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

BF16 = torch.bfloat16


def gelu_bf16(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(input, approximate=approximate)


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), kwargs)


def _ramp(c):
    # A fixed sweep across the curved part of GELU (fixed values: the same for every seed).
    x = torch.linspace(-6.0, 6.0, 257, device=c.device)
    return x.to(BF16)


def cases():
    return [
        Case("special", "edge", _one(lambda c: c.special(BF16, inf=False))),
        Case("special_tanh", "edge", _one(lambda c: c.special(BF16, inf=False), approximate="tanh")),
        Case("ramp", "edge", _one(_ramp)),
        Case("ramp_tanh", "edge", _one(_ramp, approximate="tanh")),
        Case("empty", "edge", _one(lambda c: c.randn(0, 5, dtype=BF16))),
        Case("scalar", "edge", _one(lambda c: c.randn((), dtype=BF16))),
        Case("normal", "small", _one(lambda c: c.randn(1000, 37, dtype=BF16)), dist="normal"),
        Case("normal_tanh", "small", _one(lambda c: c.randn(3, 5, 1021, dtype=BF16), approximate="tanh"),
             dist="normal"),
        Case("uniform", "small", _one(lambda c: c.uniform(4097, low=-8, high=8, dtype=BF16)),
             dist="uniform"),
        Case("outliers", "small", _one(lambda c: c.outliers(333, 65, dtype=BF16)), dist="outliers"),
        Case("outliers_tanh", "small", _one(lambda c: c.outliers(7919, dtype=BF16), approximate="tanh"),
             dist="outliers"),
        Case("perf_16M", "full", _one(lambda c: c.randn(4096, 4096, dtype=BF16)), dist="normal"),
        Case("perf_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=BF16)), dist="normal"),
        Case("perf_64M_tanh", "full", _one(lambda c: c.randn(8192, 8192, dtype=BF16), approximate="tanh"),
             dist="normal"),
        Case("perf_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=BF16)), dist="normal"),
    ]


def cost(input, approximate="none"):
    n = input.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input.element_size()}
