import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

I8 = torch.int8


def gelu_int8(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(input.float(), approximate=approximate).to(I8)


def _no_five(x):
    # With approximate='tanh', float32 GELU(5) lies within one float32 ulp of 5.0, so whether it
    # truncates to 4 or 5 depends on the tanh implementation's last bit: 5 is kept out.
    return torch.where(x == 5, torch.full_like(x, 6), x)


def _one(make_input, approximate="none"):
    if approximate == "tanh":
        return lambda c: ((_no_five(make_input(c)),), {"approximate": "tanh"})
    return lambda c: ((make_input(c),), {})


def _all_values(c):
    return torch.arange(-128, 128, device=c.device, dtype=torch.int16).to(I8)


def _edges(c):
    return torch.tensor([-128, -127, -10, -5, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 126, 127],
                        device=c.device, dtype=I8)


def _near_zero(c, *shape):
    return c.randint(-20, 21, *shape, dtype=I8)


def _full_range(c, *shape):
    return c.randint(-128, 128, *shape, dtype=I8)


def _rounded_normal(c, *shape):
    return torch.round(c.randn(*shape, std=12.0)).clamp(-128, 127).to(I8)


def cases():
    return [
        Case("all_values", "edge", _one(_all_values)),
        Case("all_values_tanh", "edge", _one(_all_values, "tanh")),
        Case("edges", "edge", _one(_edges)),
        Case("empty", "edge", _one(lambda c: _full_range(c, 0, 9))),
        Case("scalar", "edge", _one(lambda c: _full_range(c, ()))),
        Case("near_zero", "small", _one(lambda c: _near_zero(c, 1000, 37)), dist="near_zero"),
        Case("near_zero_tanh", "small", _one(lambda c: _near_zero(c, 4097), "tanh"), dist="near_zero"),
        Case("full_range", "small", _one(lambda c: _full_range(c, 3, 5, 1021)), dist="uniform"),
        Case("full_range_tanh", "small", _one(lambda c: _full_range(c, 333, 65), "tanh"), dist="uniform"),
        Case("normal", "small", _one(lambda c: _rounded_normal(c, 7919)), dist="normal"),
        Case("perf_16M", "full", _one(lambda c: _full_range(c, 4096, 4096)), dist="uniform"),
        Case("perf_64M", "full", _one(lambda c: _rounded_normal(c, 8192, 8192)), dist="normal"),
        Case("perf_64M_tanh", "full", _one(lambda c: _full_range(c, 8192, 8192), "tanh"), dist="uniform"),
        Case("perf_odd", "full", _one(lambda c: _near_zero(c, 12289, 3001)), dist="near_zero"),
    ]


def cost(input, approximate="none"):
    n = input.numel()
    return {"flops": 20 * n, "bytes": 2 * n * input.element_size()}
