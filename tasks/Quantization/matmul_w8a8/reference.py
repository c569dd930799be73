import torch

from kbx_worker.casegen import Case


def _quantize(x, dim):
    """Symmetric int8 quantization of float32 x with one scale per slice along `dim`.

    scale = absmax / 127 and q = clamp(round_half_even(x / scale), -127, 127), both divisions IEEE
    (correctly rounded) float32 divisions; an all-zero slice has scale 0 and quantizes to 0. Dividing by a
    tensor, not by a Python number, keeps the division exact on every device (CUDA turns division by a
    scalar into multiplication by its reciprocal)."""
    amax = x.abs().amax(dim=dim, keepdim=True)
    scale = amax / torch.full_like(amax, 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = torch.clamp(torch.round(x / safe), -127, 127)
    return q, scale


def _quantized_product(input, weight):
    """Exact integer product of the quantized operands (as float64) and the float32 scales."""
    qx, sx = _quantize(input.to(torch.float32), 1)   # (M, K), (M, 1)
    qw, sw = _quantize(weight.to(torch.float32), 0)  # (K, N), (1, N)
    # |partial sums| <= K * 127 * 127 < 2**53: the float64 product of the integer matrices is exact
    acc = torch.matmul(qx.to(torch.float64), qw.to(torch.float64))
    return acc, sx, sw


def matmul_w8a8(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    acc, sx, sw = _quantized_product(input, weight)
    out = (acc.to(torch.float32) * sx) * sw
    return out.to(input.dtype)


def shadow(input, weight):
    """The same scheme with float64 dequantization. The inputs are float64 copies of float32/16/bf16 values,
    so converting them back to float32 is exact and gives the reference's own scales and integers (a scale
    computed in float64 could move a value across a rounding tie and change its integer)."""
    acc, sx, sw = _quantized_product(input, weight)
    return acc * sx.to(torch.float64) * sw.to(torch.float64)


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def _const(rows):
    return lambda c: torch.tensor(rows, dtype=torch.float32, device=c.device)


def _ties_x(c):
    """Rows whose absmax is 127 * 2^j, so the scale is exactly 2^j and x / scale lands on .5 ties."""
    k = torch.arange(-8, 8, device=c.device, dtype=torch.float32) + 0.5           # -7.5 .. 7.5
    base = torch.cat([k, torch.tensor([127.0, -126.5, 2.5, -3.5], device=c.device)])
    rows = [base * 2.0 ** j for j in (-3, 0, 1, 5)]
    return torch.stack(rows)[:, c.randperm(base.numel())]


def _ties_w(c):
    k = torch.arange(0, 20, device=c.device, dtype=torch.float32) - 9.5           # -9.5 .. 9.5
    col = k.clone()
    col[3] = -127.0
    cols = [col[c.randperm(20)] * 2.0 ** j for j in (0, -2, 3)]
    return torch.stack(cols, dim=1)


def _clamped_outliers(*shape, dtype=torch.float32):
    return lambda c: c.outliers(*shape, scale=10.0).clamp(-10, 10).to(dtype)


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("zero_column", "edge", _pair(_const([[1.0, 2.0]]), _const([[1.0, 0.0, -1.0], [2.0, 0.0, 3.0]]))),
        Case("one_by_one", "edge", _pair(_const([[127.0]]), _const([[-127.0]]))),
        Case("extreme_scale", "edge",
             _pair(_const([[1.0, 1.0]]), _const([[100.0, 0.01, -0.01], [0.01, -100.0, 0.01]]))),
        Case("neg_zero", "edge", _pair(_const([[1.0, -1.0]]), _const([[0.0, -0.0], [-0.0, 1.0]]))),
        Case("zero_row", "edge", _pair(lambda c: c.randn(3, 16) * torch.tensor([[1.0], [0.0], [1.0]],
                                                                             device=c.device),
                                       lambda c: c.randn(16, 5))),
        Case("round_half_even_ties", "edge", _pair(_ties_x, _ties_w)),
        Case("normal_f32", "small", _pair(lambda c: c.randn(32, 256), lambda c: c.randn(256, 128)),
             dist="normal"),
        Case("normal_f32_odd", "small", _pair(lambda c: c.randn(61, 127), lambda c: c.randn(127, 77)),
             dist="normal"),
        Case("outliers_f32", "small", _pair(_clamped_outliers(64, 128), _clamped_outliers(128, 64)),
             dist="outliers"),
        Case("outliers_act_bf16", "small",
             _pair(lambda c: c.outliers(50, 100, frac=0.02, scale=30.0, dtype=bf16),
                   lambda c: c.randn(100, 70, std=0.05, dtype=bf16)), dist="outliers"),
        Case("uniform_f16", "small", _pair(lambda c: c.uniform(33, 96, low=-2, high=2, dtype=f16),
                                           lambda c: c.uniform(96, 41, low=-1, high=1, dtype=f16)),
             dist="uniform"),
        Case("perf_f32_4096", "full", _pair(lambda c: c.randn(4096, 4096), lambda c: c.randn(4096, 4096)),
             dist="normal"),
        Case("perf_bf16_8192", "full", _pair(lambda c: c.randn(8192, 8192, dtype=bf16),
                                             lambda c: c.randn(8192, 8192, std=0.02, dtype=bf16)),
             dist="normal"),
        Case("perf_f16_mlp", "full", _pair(lambda c: c.outliers(8192, 4096, frac=0.001, scale=20.0, dtype=f16),
                                           lambda c: c.randn(4096, 14336, std=0.02, dtype=f16)),
             dist="outliers"),
    ]


def cost(input, weight):
    m, k = input.shape
    n = weight.shape[1]
    es = input.element_size()
    # the flops are int8 products with int32 sums, whatever the input dtype
    return {"flops": 2 * m * n * k, "bytes": (m * k + k * n + m * n) * es, "compute": "int8"}
