import torch

from kbx_worker.casegen import Case


def fused_log_tanh(input, out=None):
    if torch.any(input <= 0):
        raise ValueError("All input elements must be positive for the logarithm function to be defined.")
    result = torch.tanh(torch.log(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


def _positive_special(c, dtype):
    s = c.special(dtype).abs()
    return s[s > 0]  # drops the zeros; keeps tiny, subnormal, max, inf and nan


def _lognormal(c, *shape, dtype=torch.float32, sigma=3.0):
    return torch.exp(c.randn(*shape) * sigma).to(dtype)


def _abs_outliers(c, *shape, dtype=torch.float32):
    return (c.outliers(*shape).abs() + 1e-3).to(dtype)


def _one(make_input, **kwargs):
    return lambda c: ((make_input(c),), kwargs)


def _with_out(make_input):
    def make(c):
        x = make_input(c)
        return (x,), {"out": torch.full_like(x, -5.0)}
    return make


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _one(lambda c: _positive_special(c, torch.float32))),
        Case("special_f16", "edge", _one(lambda c: _positive_special(c, f16))),
        Case("special_bf16", "edge", _one(lambda c: _positive_special(c, bf16))),
        Case("near_one_f32", "edge",
             _one(lambda c: 1.0 + c.uniform(2049, low=-1e-3, high=1e-3))),
        Case("empty_f32", "edge", _one(lambda c: c.uniform(0, 5, low=0.5, high=2.0))),
        Case("scalar_f32", "edge", _one(lambda c: c.uniform((), low=0.5, high=2.0))),
        Case("out_f32", "edge", _with_out(lambda c: c.uniform(33, 17, low=0.01, high=10.0)),
             dist="uniform"),
        Case("uniform_f32", "small", _one(lambda c: c.uniform(1000, 37, low=1e-3, high=20.0)),
             dist="uniform"),
        Case("lognormal_f32", "small", _one(lambda c: _lognormal(c, 3, 5, 1021)),
             dist="lognormal"),
        Case("outliers_f32", "small", _one(lambda c: _abs_outliers(c, 7919)), dist="outliers"),
        Case("uniform_f16", "small",
             _one(lambda c: c.uniform(4097, low=1e-2, high=50.0, dtype=f16)), dist="uniform"),
        Case("lognormal_bf16", "small", _one(lambda c: _lognormal(c, 333, 65, dtype=bf16)),
             dist="lognormal"),
        Case("outliers_bf16_out", "small", _with_out(lambda c: _abs_outliers(c, 129, 61, dtype=bf16)),
             dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: _lognormal(c, 4096, 4096, sigma=1.0)),
             dist="lognormal"),
        Case("perf_f32_64M", "full", _one(lambda c: c.uniform(8192, 8192, low=1e-3, high=8.0)),
             dist="uniform"),
        Case("perf_bf16_64M", "full", _one(lambda c: _lognormal(c, 8192, 8192, dtype=bf16)),
             dist="lognormal"),
        Case("perf_f16_odd_out", "full",
             _with_out(lambda c: c.uniform(12289, 3001, low=1e-2, high=30.0, dtype=f16)),
             dist="uniform"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": 25 * n, "bytes": 2 * n * input.element_size()}
