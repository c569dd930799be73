import torch

from kbx_worker.casegen import Case


def reciprocal(input, out=None):
    return torch.reciprocal(input, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def _away_from_zero(c, *shape, dtype=torch.float32, low=1e-3):
    """Normal values pushed away from zero (|x| >= low), so that 1/x stays moderate."""
    x = c.randn(*shape)
    return (torch.sign(x) * x.abs().clamp(min=low) + (x == 0) * low).to(dtype)


def _log_uniform(c, *shape, lo=-30, hi=30, dtype=torch.float32):
    mag = torch.pow(10.0, c.uniform(*shape, low=lo, high=hi))
    return (torch.where(c.bernoulli(*shape), 1.0, -1.0) * mag).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32))),
        Case("special_f16", "edge", _plain(lambda c: c.special(torch.float16))),
        Case("special_bf16", "edge", _plain(lambda c: c.special(torch.bfloat16))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.uniform((), low=0.5, high=2))),
        Case("out_f32", "edge", _into_out(lambda c: _away_from_zero(c, 257, 33)), dist="normal"),
        Case("normal_f32", "small", _plain(lambda c: _away_from_zero(c, 1000, 37)), dist="normal"),
        Case("uniform_f16", "small", _plain(lambda c: c.uniform(4097, low=0.01, high=100, dtype=torch.float16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _plain(lambda c: c.outliers(333, 65, dtype=torch.bfloat16)),
             dist="outliers"),
        Case("outliers_f32", "small", _plain(lambda c: _away_from_zero(c, 3, 5, 1021) * torch.where(
            c.bernoulli(3, 5, 1021, p=0.01), 1000.0, 1.0)), dist="outliers"),
        Case("log_uniform_f32", "small", _plain(lambda c: _log_uniform(c, 7919)), dist="log_uniform"),
        Case("tiny_results_f32", "small", _plain(lambda c: _log_uniform(c, 5003, lo=37, hi=38.5)),
             dist="log_uniform"),
        Case("perf_f32_16M", "full", _plain(lambda c: _away_from_zero(c, 4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: _away_from_zero(c, 8192, 8192)), dist="normal"),
        Case("perf_bf16_64M", "full", _plain(lambda c: _away_from_zero(c, 8192, 8192, dtype=torch.bfloat16)),
             dist="normal"),
        Case("perf_f16_odd", "full", _plain(lambda c: _away_from_zero(c, 12289, 3001, dtype=torch.float16)),
             dist="normal"),
    ]


def cost(input, out=None):
    n = input.numel()
    return {"flops": n, "bytes": 2 * n * input.element_size()}
