import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None, stride: int = 1,
           padding: int = 0, dilation: int = 1, groups: int = 1) -> torch.Tensor:
    if input.device.type == "cpu" and input.dtype in (torch.float16, torch.bfloat16):
        # Older PyTorch releases have no half-precision CPU convolution: compute in float32, round once.
        b = None if bias is None else bias.float()
        out = F.conv2d(input.float(), weight.float(), b, stride, padding, dilation, groups)
        return out.to(input.dtype)
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def _conv(x_shape, w_shape, bias=False, draw="randn", dtype=torch.float32, **kwargs):
    """Random input, weight (scaled by 1/sqrt(fan_in), as in a trained layer) and optional bias."""
    def make(c):
        fan_in = w_shape[1] * w_shape[2] * w_shape[3]
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-1, high=1)
        elif draw == "outliers":
            x = c.outliers(*x_shape)
        else:
            x = c.randn(*x_shape)
        w = c.randn(*w_shape, std=fan_in ** -0.5)
        args = [x.to(dtype), w.to(dtype)]
        if bias:
            args.append(c.randn(w_shape[0]).to(dtype))
        return tuple(args), kwargs
    return make


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("basic", "edge", _conv((1, 3, 5, 5), (2, 3, 3, 3))),
        Case("stride2", "edge", _conv((1, 3, 5, 5), (2, 3, 3, 3), stride=2)),
        Case("padding1", "edge", _conv((1, 3, 5, 5), (2, 3, 3, 3), padding=1)),
        Case("dilation2", "edge", _conv((1, 3, 5, 5), (2, 3, 3, 3), dilation=2)),
        Case("kernel_covers_input", "edge", _conv((2, 4, 6, 6), (5, 4, 6, 6), bias=True)),
        Case("pointwise_1x1", "edge", _conv((2, 8, 4, 4), (16, 8, 1, 1))),
        Case("padding_wider_than_kernel_half", "edge", _conv((1, 2, 3, 3), (3, 2, 2, 2), padding=2,
                                                              bias=True)),
        Case("empty_batch", "edge", _conv((0, 3, 8, 8), (4, 3, 3, 3))),
        Case("normal_f32_s2_p1", "small", _conv((2, 3, 16, 16), (4, 3, 3, 3), stride=2, padding=1),
             dist="normal"),
        Case("normal_f32_odd_bias", "small", _conv((2, 8, 17, 19), (12, 8, 3, 3), bias=True, padding=1),
             dist="normal"),
        Case("uniform_f32_5x5_s3_d2", "small",
             _conv((1, 6, 31, 29), (7, 6, 5, 5), draw="uniform", stride=3, padding=2, dilation=2),
             dist="uniform"),
        Case("outliers_f32_groups3", "small",
             _conv((2, 9, 13, 15), (6, 3, 3, 3), draw="outliers", bias=True, groups=3), dist="outliers"),
        Case("normal_f32_depthwise", "small",
             _conv((2, 16, 21, 23), (16, 1, 3, 3), bias=True, padding=1, groups=16), dist="normal"),
        Case("normal_f32_7x7_s2_p3", "small", _conv((1, 3, 37, 41), (8, 3, 7, 7), stride=2, padding=3),
             dist="normal"),
        Case("normal_f16", "small", _conv((2, 16, 15, 15), (24, 16, 3, 3), bias=True, padding=1, dtype=f16),
             dist="normal"),
        Case("uniform_bf16_s2", "small",
             _conv((2, 12, 20, 18), (16, 12, 3, 3), draw="uniform", stride=2, padding=1, dtype=bf16),
             dist="uniform"),
        Case("perf_f32_resnet_stem_7x7_s2", "full",
             _conv((32, 3, 224, 224), (64, 3, 7, 7), stride=2, padding=3), dist="normal"),
        Case("perf_f32_3x3_64ch_56", "full", _conv((32, 64, 56, 56), (64, 64, 3, 3), bias=True, padding=1),
             dist="normal"),
        Case("perf_f16_3x3_s2_128ch", "full",
             _conv((32, 128, 56, 56), (128, 128, 3, 3), stride=2, padding=1, dtype=f16), dist="normal"),
        Case("perf_bf16_1x1_256_to_64", "full", _conv((32, 256, 56, 56), (64, 256, 1, 1), dtype=bf16),
             dist="normal"),
        Case("perf_f32_depthwise_256ch_56", "full",
             _conv((32, 256, 56, 56), (256, 1, 3, 3), bias=True, padding=1, groups=256), dist="normal"),
        Case("perf_bf16_3x3_128ch_56", "full",
             _conv((32, 128, 56, 56), (128, 128, 3, 3), padding=1, dtype=bf16), dist="normal"),
    ]


def _out_size(size, k, stride, padding, dilation):
    return (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1


def cost(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    n, _, h, w = input.shape
    cout, cin_g, kh, kw = weight.shape
    ho = _out_size(h, kh, stride, padding, dilation)
    wo = _out_size(w, kw, stride, padding, dilation)
    out = n * cout * ho * wo
    moved = input.numel() + weight.numel() + (0 if bias is None else bias.numel()) + out
    return {"flops": 2 * out * cin_g * kh * kw, "bytes": moved * input.element_size()}
