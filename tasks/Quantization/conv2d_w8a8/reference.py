import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def _quantize(x, dim):
    """Symmetric int8 codes (as float) and float32 scales of float32 x; one scale over the dims `dim`
    (None: the whole tensor). scale = absmax / 127 and q = clamp(round_half_even(x / scale), -127, 127), both
    IEEE float32 divisions by tensors; an all-zero slice has scale 0 and codes 0."""
    amax = x.abs().amax() if dim is None else x.abs().amax(dim=dim, keepdim=True)
    scale = amax / torch.full_like(amax, 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(x / safe), -127, 127), scale


def _conv(input, weight, bias, stride, padding, dt):
    qx, sx = _quantize(input.to(torch.float32), None)
    qw, sw = _quantize(weight.to(torch.float32), (1, 2, 3))
    acc = F.conv2d(qx.to(dt), qw.to(dt), None, stride, padding)
    out = acc * sx.to(dt) * sw.to(dt).reshape(1, -1, 1, 1)
    if bias is not None:
        out = out + bias.to(dt).reshape(1, -1, 1, 1)
    return out


def conv2d_w8a8(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None,
                stride: int = 1, padding: int = 0) -> torch.Tensor:
    return _conv(input, weight, bias, stride, padding, torch.float32).to(input.dtype)


def shadow(input, weight, bias=None, stride=1, padding=0):
    """Same scales and codes (the float64 inputs convert back to float32 exactly); exact float64
    convolution of the codes and float64 dequantization."""
    return _conv(input, weight, bias, stride, padding, torch.float64)


def _conv_case(x_shape, w_shape, bias=False, draw="randn", dtype=torch.float32, **kwargs):
    def make(c):
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-2, high=2)
        elif draw == "outliers":
            x = c.outliers(*x_shape, frac=0.01, scale=10.0).clamp(-10, 10)
        else:
            x = c.randn(*x_shape)
        w = c.randn(*w_shape, std=(w_shape[1] * w_shape[2] * w_shape[3]) ** -0.5)
        args = [x.to(dtype), w.to(dtype)]
        if bias:
            args.append(c.randn(w_shape[0]).to(dtype))
        return tuple(args), kwargs
    return make


def _zero_kernel(c):
    w = c.randn(2, 1, 3, 3)
    w[0] = 0.0
    return (c.randn(1, 1, 5, 5), w, None), {"stride": 1, "padding": 1}


def _large_bias(c):
    b = torch.tensor([100.0, -100.0, 50.0], device=c.device)
    return (c.randn(1, 2, 4, 4) * 0.01, c.randn(3, 2, 2, 2) * 0.01, b), {}


def _ties(c):
    """Input absmax 127 (scale exactly 1) and filters with absmax 127 * 2^-j (scale 2^-j), entries on .5
    ties of the code grid."""
    k = torch.arange(-8, 8, device=c.device, dtype=torch.float32) + 0.5
    grid = torch.cat([k.repeat(3), torch.tensor([127.0, -126.5], device=c.device)])      # 50 values
    x = grid[c.randperm(50)][:48].reshape(1, 3, 4, 4).clone()
    x[0, 1, 2, 2] = 127.0
    fil = torch.cat([k, torch.tensor([-127.0, 3.5, -4.5, 5.5, 6.5, -7.5, 2.5, 1.5, 0.5, -0.5, 10.5],
                                     device=c.device)])                                   # 27 values
    w = torch.stack([fil[c.randperm(27)].reshape(3, 3, 3) * 2.0 ** -j for j in (0, 3, 6, 9)])
    return (x, w, None), {"padding": 1}


def _near_ties(c):
    """Values within an ulp or two of code ties for the per-tensor input scale and the per-filter scales."""
    def rows(n, width):
        amax = c.uniform(n, 1, low=0.5, high=4.0)
        scale = amax / torch.full_like(amax, 127.0)
        k = c.randint(-127, 127, n, width).to(torch.float64)
        v = ((k + 0.5) * scale.to(torch.float64)).to(torch.float32)
        return torch.cat([amax, v[:, 1:]], dim=1)[:, c.randperm(width)]
    x = rows(1, 8 * 20 * 20).reshape(1, 8, 20, 20)
    w = rows(64, 8 * 3 * 3).reshape(64, 8, 3, 3)
    return (x, w, None), {"padding": 1}


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("pointwise_1x1", "edge", _conv_case((1, 8, 4, 4), (16, 8, 1, 1))),
        Case("stride2_no_padding", "edge", _conv_case((1, 3, 8, 8), (4, 3, 3, 3), stride=2, padding=0)),
        Case("zero_kernel", "edge", _zero_kernel),
        Case("large_bias", "edge", _large_bias),
        Case("round_half_even_ties", "edge", _ties),
        Case("near_ties", "edge", _near_ties),
        Case("zero_input", "edge", lambda c: ((torch.zeros(1, 2, 5, 5, device=c.device), c.randn(3, 2, 3, 3),
                                               c.randn(3)), {"padding": 1})),
        Case("normal_f32_bias_p1", "small", _conv_case((2, 3, 16, 16), (8, 3, 3, 3), bias=True, padding=1),
             dist="normal"),
        Case("normal_f32_odd", "small", _conv_case((2, 12, 17, 19), (20, 12, 3, 3), stride=2, padding=1),
             dist="normal"),
        Case("outliers_f32", "small", _conv_case((2, 3, 16, 16), (8, 3, 3, 3), draw="outliers", bias=True,
                                                 padding=1), dist="outliers"),
        Case("outliers_f32_1x1", "small", _conv_case((1, 16, 8, 8), (16, 16, 1, 1), draw="outliers"),
             dist="outliers"),
        Case("uniform_f32_5x5_s3", "small", _conv_case((1, 6, 29, 31), (10, 6, 5, 5), draw="uniform",
                                                       stride=3, padding=2), dist="uniform"),
        Case("normal_f16", "small", _conv_case((2, 16, 14, 14), (24, 16, 3, 3), bias=True, padding=1,
                                               dtype=f16), dist="normal"),
        Case("uniform_bf16", "small", _conv_case((2, 8, 15, 13), (12, 8, 3, 3), draw="uniform", padding=1,
                                                 dtype=bf16), dist="uniform"),
        Case("perf_f32_3x3_64ch_56", "full", _conv_case((32, 64, 56, 56), (64, 64, 3, 3), bias=True, padding=1),
             dist="normal"),
        Case("perf_f16_3x3_s2_128ch", "full",
             _conv_case((32, 128, 56, 56), (128, 128, 3, 3), stride=2, padding=1, dtype=f16), dist="normal"),
        Case("perf_bf16_1x1_256_to_64", "full", _conv_case((32, 256, 56, 56), (64, 256, 1, 1), dtype=bf16),
             dist="normal"),
        Case("perf_f32_outliers_3x3_128ch_28", "full",
             _conv_case((64, 128, 28, 28), (128, 128, 3, 3), draw="outliers", bias=True, padding=1),
             dist="outliers"),
    ]


def cost(input, weight, bias=None, stride=1, padding=0):
    n, _, h, w = input.shape
    cout, cin, kh, kw = weight.shape
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (w + 2 * padding - kw) // stride + 1
    out = n * cout * ho * wo
    moved = input.numel() + weight.numel() + (0 if bias is None else bias.numel()) + out
    return {"flops": 2 * out * cin * kh * kw, "bytes": moved * input.element_size()}
