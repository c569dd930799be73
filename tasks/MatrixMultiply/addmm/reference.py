import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def addmm(input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, beta: float = 1,
          alpha: float = 1, out: torch.Tensor = None) -> torch.Tensor:
    result = torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _draw(c, dist, *shape, dtype=F32):
    if dist == "normal":
        return c.randn(*shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0, dtype=dtype)
    if dist == "outliers":
        # float16 would overflow on products of 1000x outliers; keep them at 20x there
        return c.outliers(*shape, dtype=dtype, scale=20.0 if dtype == F16 else 1000.0)
    raise ValueError(dist)


def _make(dist, m, k, n, dtype=F32, bias="full", out=False, **kw):
    """bias: 'full' -> input (m, n); 'row' -> (n,); 'col1' -> (1, n)."""
    def make(c):
        shape = {"full": (m, n), "row": (n,), "col1": (1, n)}[bias]
        inp = _draw(c, dist, *shape, dtype=dtype)
        a = _draw(c, dist, m, k, dtype=dtype)
        b = _draw(c, dist, k, n, dtype=dtype)
        kwargs = dict(kw)
        if out:
            kwargs["out"] = torch.zeros(m, n, dtype=dtype, device=c.device)
        return (inp, a, b), kwargs
    return make


def _fixed(**kw):
    def make(c):
        inp = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=c.device)
        a = torch.tensor([[1.0, 0.0], [0.0, 1.0]], device=c.device)
        b = torch.tensor([[5.0, 6.0], [7.0, 8.0]], device=c.device)
        return (inp, a, b), dict(kw)
    return make


def _special_input(dtype, beta):
    """input holds zeros, extremes, subnormals, +-inf and NaN. With beta=0 it must be ignored
    entirely (no NaN/inf propagation); with beta=1 the specials pass through the sum."""
    def make(c):
        inp = c.special(dtype).reshape(2, 9)
        a = c.uniform(2, 5, low=-1.0, high=1.0, dtype=dtype)
        b = c.uniform(5, 9, low=-1.0, high=1.0, dtype=dtype)
        return (inp, a, b), {"beta": beta}
    return make


def cases():
    return [
        Case("fixed_default", "edge", _fixed()),
        Case("fixed_beta0p5_alpha2", "edge", _fixed(beta=0.5, alpha=2.0)),
        Case("special_input_beta0_f32", "edge", _special_input(F32, 0.0)),
        Case("special_input_beta0_bf16", "edge", _special_input(BF16, 0.0)),
        Case("special_input_beta1_f32", "edge", _special_input(F32, 1.0)),
        Case("empty_k_f32", "edge", _make("normal", 3, 0, 4, beta=0.5)),
        Case("empty_m_f16", "edge", _make("normal", 0, 5, 4, dtype=F16)),
        Case("normal_f32", "small", _make("normal", 37, 53, 29, beta=0.5, alpha=2.0),
             dist="normal"),
        Case("uniform_f16_bias", "small", _make("uniform", 64, 128, 48, dtype=F16, bias="row"),
             dist="uniform"),
        Case("outliers_bf16", "small", _make("outliers", 50, 70, 33, dtype=BF16, bias="col1",
                                             beta=-1.0, alpha=0.5), dist="outliers"),
        Case("outliers_f16", "small", _make("outliers", 31, 96, 65, dtype=F16, alpha=0.25),
             dist="outliers"),
        Case("normal_f16_beta0", "small", _make("normal", 45, 100, 77, dtype=F16, beta=0.0,
                                                alpha=1.5), dist="normal"),
        Case("out_f32", "small", _make("normal", 40, 60, 20, out=True, beta=2.0),
             dist="normal"),
        Case("perf_bf16_4096", "full", _make("normal", 4096, 4096, 4096, dtype=BF16, bias="row"),
             dist="normal"),
        Case("perf_f16_8192", "full", _make("normal", 8192, 8192, 8192, dtype=F16, beta=0.5,
                                            alpha=0.5), dist="normal"),
        Case("perf_bf16_llm", "full", _make("uniform", 8192, 4096, 14336, dtype=BF16, bias="row"),
             dist="uniform"),
        Case("perf_f16_odd", "full", _make("normal", 4097, 3001, 5003, dtype=F16), dist="normal"),
        Case("perf_f32_4096", "full", _make("normal", 4096, 4096, 4096, beta=0.5),
             dist="normal"),
    ]


def cost(input, mat1, mat2, beta=1, alpha=1, out=None):
    m, k = mat1.shape
    n = mat2.shape[1]
    elems = input.numel() + mat1.numel() + mat2.numel() + m * n
    return {"flops": 2 * m * n * k + 3 * m * n, "bytes": elems * mat1.element_size()}
