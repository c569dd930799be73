import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def _quantize(x, dims):
    """Symmetric int8 codes (as float) and float32 scales of float32 x, one scale over the dims `dims`.
    scale = absmax / 127 and q = clamp(round_half_even(x / scale), -127, 127), both IEEE float32 divisions by
    tensors; an all-zero slice has scale 0 and codes 0."""
    amax = x.abs().amax(dim=dims, keepdim=True)
    scale = amax / torch.full_like(amax, 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(x / safe), -127, 127), scale


def _layernorm(input, normalized_shape, weight, bias, eps, dt):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(-len(shape), 0))
    qx, sx = _quantize(input.to(torch.float32), dims)
    xd = qx.to(dt) * sx.to(dt)
    wd = None
    if weight is not None:
        qw, sw = _quantize(weight.to(torch.float32), tuple(range(weight.dim())))
        wd = qw.to(dt) * sw.to(dt)
    bd = None if bias is None else bias.to(dt)
    return F.layer_norm(xd, shape, wd, bd, eps)


def layernorm_w8a8(input: torch.Tensor, normalized_shape, weight: torch.Tensor = None,
                   bias: torch.Tensor = None, eps: float = 1e-5) -> torch.Tensor:
    return _layernorm(input, normalized_shape, weight, bias, eps, torch.float32).to(input.dtype)


def shadow(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Same scales and codes (the float64 inputs convert back to float32 exactly); layer norm in float64."""
    return _layernorm(input, normalized_shape, weight, bias, eps, torch.float64)


def _ln(x_shape, nshape, affine=True, draw="randn", dtype=torch.float32, **kwargs):
    def make(c):
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-3, high=3)
        elif draw == "outliers":
            x = c.outliers(*x_shape, frac=0.01, scale=10.0)
        elif draw == "offset":
            x = c.randn(*x_shape) + 3.0
        else:
            x = c.randn(*x_shape)
        args = [x.to(dtype), nshape]
        if affine:
            args.append(c.randn(*nshape, mean=1.0, std=0.2).to(dtype))
            args.append(c.randn(*nshape, std=0.1).to(dtype))
        return tuple(args), kwargs
    return make


def _fixed_affine(c):
    w = torch.tensor([100.0, 0.01, -100.0, 0.01], device=c.device)
    b = torch.tensor([50.0, -50.0, 0.0, 100.0], device=c.device)
    return (c.randn(2, 4), (4,), w, b), {}


def _ties(c):
    """Rows with absmax 127 * 2^j (scale exactly 2^j) and entries on .5 ties; weight likewise."""
    k = torch.arange(-8, 8, device=c.device, dtype=torch.float32) + 0.5
    base = torch.cat([k, torch.tensor([127.0, -126.5, 2.5, -3.5, 0.0, 1.0, -0.5, 6.5, 9.5, -10.5, 11.5,
                                       12.5, -13.5, 14.5, 15.5, 16.5], device=c.device)])  # 32 values
    x = torch.stack([base[c.randperm(32)] * 2.0 ** (-i % 5) for i in range(6)])
    w = base[c.randperm(32)] * 2.0 ** -6
    return (x, (32,), w, c.randn(32, std=0.1)), {}


def _near_ties(c):
    """Rows within an ulp or two of code ties: a scale or quotient off by one ulp flips codes."""
    rows, n = 256, 96
    amax = c.uniform(rows, 1, low=0.5, high=4.0)
    scale = amax / torch.full_like(amax, 127.0)
    k = c.randint(-127, 127, rows, n).to(torch.float64)
    x = ((k + 0.5) * scale.to(torch.float64)).to(torch.float32)
    x = torch.cat([amax, x[:, 1:]], dim=1)[:, c.randperm(n)]
    return (x, (n,), c.randn(n, mean=1.0, std=0.2), c.randn(n, std=0.1)), {}


def _zero_rows(c):
    x = c.randn(5, 24)
    x[1] = 0.0
    x[3] = 0.0
    return (x, (24,), c.randn(24, mean=1.0, std=0.2), c.randn(24)), {}


def cases():
    bf16 = torch.bfloat16
    return [
        Case("no_affine", "edge", _ln((3, 16), (16,), affine=False)),
        Case("extreme_affine", "edge", _fixed_affine),
        Case("single_element_rows", "edge", _ln((4, 1), (1,))),
        Case("zero_rows", "edge", _zero_rows),
        Case("round_half_even_ties", "edge", _ties),
        Case("near_ties", "edge", _near_ties),
        Case("tiny_eps", "edge", _ln((6, 40), (40,), eps=1e-10)),
        Case("empty_batch", "edge", _ln((0, 32), (32,))),
        Case("normal_f32", "small", _ln((32, 256), (256,)), dist="normal"),
        Case("normal_f32_no_affine", "small", _ln((16, 512), (512,), affine=False), dist="normal"),
        Case("outliers_f32", "small", _ln((32, 256), (256,), draw="outliers"), dist="outliers"),
        Case("outliers_f32_no_affine", "small", _ln((16, 512), (512,), affine=False, draw="outliers"),
             dist="outliers"),
        Case("uniform_f32_2d_shape", "small", _ln((4, 7, 12, 33), (12, 33), draw="uniform"), dist="uniform"),
        Case("offset_f32_odd", "small", _ln((3, 41, 301), (301,), draw="offset", eps=1e-6), dist="offset"),
        Case("normal_bf16", "small", _ln((64, 768), (768,), dtype=bf16), dist="normal"),
        Case("perf_f32_8192x4096", "full", _ln((8192, 4096), (4096,)), dist="normal"),
        Case("perf_bf16_16384x8192", "full", _ln((16384, 8192), (8192,), dtype=bf16), dist="normal"),
        Case("perf_f32_outliers_65536x768", "full", _ln((65536, 768), (768,), draw="outliers"),
             dist="outliers"),
        Case("perf_bf16_4x4096x5120_no_affine", "full",
             _ln((4, 4096, 5120), (5120,), affine=False, dtype=bf16), dist="normal"),
    ]


def cost(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = input.numel()
    es = input.element_size()
    params = (0 if weight is None else weight.numel()) + (0 if bias is None else bias.numel())
    return {"flops": 12 * n, "bytes": (2 * n + params) * es}
