import torch

from kbx_worker.casegen import Case


def logit(input: torch.Tensor, eps: float = None, out: torch.Tensor = None) -> torch.Tensor:
    if eps is not None:
        input = input.clamp(eps, 1 - eps)
    return torch.log(input / (1 - input), out=out)


def _call(make, **kwargs):
    return lambda c: ((make(c),), dict(kwargs))


def _into_out(make, **kwargs):
    def build(c):
        x = make(c)
        return (x,), dict(kwargs, out=c.randn(x.shape, dtype=x.dtype))
    return build


# eps values are powers of two so that eps and 1 - eps are exact in the input dtype: a clamp bound
# that rounds differently at float32 and float64 would move the result near 1 by up to 0.06.
EPS_F32 = 2.0 ** -20
EPS_F16 = 2.0 ** -10
EPS_BF16 = 2.0 ** -7


def _probs(c, *shape, dtype=torch.float32):
    """Probabilities with log-odds spread over [-15, 15]: many close to 0 or 1."""
    return torch.sigmoid(c.uniform(*shape, low=-15, high=15)).to(dtype)


def cases():
    return [
        Case("special_f32", "edge", _call(lambda c: c.special(torch.float32))),
        Case("special_f32_eps", "edge", _call(lambda c: c.special(torch.float32), eps=EPS_F32)),
        Case("special_f16_eps", "edge", _call(lambda c: c.special(torch.float16), eps=EPS_F16)),
        Case("special_bf16", "edge", _call(lambda c: c.special(torch.bfloat16))),
        Case("bounds_f32_eps", "edge", _call(lambda c: torch.tensor(
            [0.0, 1.0, 0.5, 1e-7, 1 - 1e-7, -0.5, 1.5, 0.999], device=c.device), eps=EPS_F32)),
        Case("empty_f32", "edge", _call(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _call(lambda c: c.uniform((), low=0.05, high=0.95))),
        Case("out_f32", "edge", _into_out(lambda c: c.uniform(257, 33, low=0.01, high=0.99)), dist="uniform"),
        Case("out_f32_eps", "edge", _into_out(lambda c: c.uniform(129, 17), eps=2.0 ** -13), dist="uniform"),
        Case("uniform_f32", "small", _call(lambda c: c.uniform(1000, 37, low=0.001, high=0.999)),
             dist="uniform"),
        Case("probs_f32", "small", _call(lambda c: _probs(c, 3, 5, 1021)), dist="probs"),
        Case("probs_f32_eps", "small", _call(lambda c: _probs(c, 7919), eps=EPS_F32), dist="probs"),
        Case("sigmoid_normal_f16", "small",
             _call(lambda c: torch.sigmoid(c.randn(4097, std=3.0)).to(torch.float16), eps=EPS_F16),
             dist="normal"),
        Case("sigmoid_outliers_bf16", "small",
             _call(lambda c: torch.sigmoid(c.outliers(333, 65, scale=10.0)).to(torch.bfloat16), eps=EPS_BF16),
             dist="outliers"),
        Case("perf_f32_16M", "full", _call(lambda c: _probs(c, 4096, 4096)), dist="probs"),
        Case("perf_f32_64M_eps", "full", _call(lambda c: _probs(c, 8192, 8192), eps=EPS_F32), dist="probs"),
        Case("perf_bf16_64M", "full",
             _call(lambda c: c.uniform(8192, 8192, low=0.01, high=0.99, dtype=torch.bfloat16)), dist="uniform"),
        Case("perf_f16_odd_eps", "full",
             _call(lambda c: c.uniform(12289, 3001, dtype=torch.float16), eps=EPS_F16), dist="uniform"),
    ]


def cost(input, eps=None, out=None):
    n = input.numel()
    return {"flops": 25 * n, "bytes": 2 * n * input.element_size()}
