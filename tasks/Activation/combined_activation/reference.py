import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def combined_activation(input, weight1, weight2, bias, *, out=None):
    y = torch.tanh(torch.sigmoid(torch.mm(input, weight1))) * weight2 + bias
    if out is not None:
        out.copy_(y)
        return out
    return y


def _make(n, k, m, dtype=F32, w2_full=True, bias_full=False, with_out=False, draw=None):
    """input (n, k), weight1 (k, m) scaled so that input@weight1 has unit variance; weight2 is
    (n, m) or (m,), bias (n, m) or (m,)."""
    def make(c):
        gen = draw or (lambda *shape: c.randn(*shape))
        x = gen(n, k).to(dtype)
        w1 = (gen(k, m) / max(k, 1) ** 0.5).to(dtype)
        w2 = gen(*((n, m) if w2_full else (m,))).to(dtype)
        b = gen(*((n, m) if bias_full else (m,))).to(dtype)
        kwargs = {"out": torch.zeros(n, m, dtype=dtype, device=c.device)} if with_out else {}
        return (x, w1, w2, b), kwargs
    return make


def _uniform(c):
    return lambda *shape: c.uniform(*shape, low=-2, high=2)


def _outliers(c):
    return lambda *shape: c.outliers(*shape)


def _with(dist_fn, *args, **kwargs):
    return lambda c: _make(*args, draw=dist_fn(c), **kwargs)(c)


def cases():
    return [
        Case("empty_rows", "edge", _make(0, 16, 8)),
        Case("k_zero", "edge", _make(5, 0, 7)),
        Case("one_by_one", "edge", _make(1, 1, 1, bias_full=True)),
        Case("normal_f32", "small", _make(37, 53, 29), dist="normal"),
        Case("normal_f32_out", "small", _make(64, 100, 33, bias_full=True, with_out=True), dist="normal"),
        Case("normal_f32_bcast", "small", _make(128, 128, 96, w2_full=False), dist="normal"),
        Case("uniform_f32", "small", _with(_uniform, 97, 61, 113, bias_full=True), dist="uniform"),
        Case("outliers_f32", "small", _with(_outliers, 120, 72, 45), dist="outliers"),
        Case("normal_f16", "small", _make(64, 128, 96, dtype=F16), dist="normal"),
        Case("normal_bf16_out", "small", _make(77, 96, 50, dtype=BF16, with_out=True), dist="normal"),
        Case("perf_f32_4k", "full", _make(4096, 4096, 4096, w2_full=False), dist="normal"),
        Case("perf_bf16_8k", "full", _make(8192, 8192, 8192, dtype=BF16), dist="normal"),
        Case("perf_f16_tall", "full", _make(16384, 1024, 4096, dtype=F16, bias_full=True), dist="normal"),
        Case("perf_bf16_odd", "full", _make(6007, 3001, 5003, dtype=BF16, w2_full=False), dist="normal"),
    ]


def cost(input, weight1, weight2, bias, *, out=None):
    n, k = input.shape
    m = weight1.shape[1]
    es = input.element_size()
    moved = input.numel() + weight1.numel() + weight2.numel() + bias.numel() + n * m
    return {"flops": 2 * n * k * m + 12 * n * m, "bytes": moved * es}
