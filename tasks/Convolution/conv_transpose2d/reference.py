import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def conv_transpose2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, groups: int = 1,
                     dilation: int = 1) -> torch.Tensor:
    if input.device.type == "cpu" and input.dtype in (torch.float16, torch.bfloat16):
        # Older PyTorch releases have no half-precision CPU convolution: compute in float32, round once.
        b = None if bias is None else bias.float()
        out = F.conv_transpose2d(input.float(), weight.float(), b, stride, padding, output_padding, groups,
                                 dilation)
        return out.to(input.dtype)
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def _convt(x_shape, w_shape, bias=False, draw="randn", dtype=torch.float32, **kwargs):
    """Random input, weight scaled by 1/sqrt(Cin*kH*kW) and optional bias."""
    def make(c):
        fan = w_shape[0] * w_shape[2] * w_shape[3]
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-1, high=1)
        elif draw == "outliers":
            x = c.outliers(*x_shape)
        else:
            x = c.randn(*x_shape)
        w = c.randn(*w_shape, std=fan ** -0.5)
        cout = w_shape[1] * kwargs.get("groups", 1)
        args = [x.to(dtype), w.to(dtype)]
        if bias:
            args.append(c.randn(cout).to(dtype))
        return tuple(args), kwargs
    return make


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("basic", "edge", _convt((1, 4, 8, 8), (4, 6, 3, 3))),
        Case("s2_p1_op1_bias", "edge", _convt((1, 4, 8, 8), (4, 6, 3, 3), bias=True, stride=2, padding=1,
                                              output_padding=1)),
        Case("groups2", "edge", _convt((2, 4, 8, 8), (4, 2, 3, 3), groups=2)),
        Case("one_pixel_input", "edge", _convt((2, 3, 1, 1), (3, 5, 4, 4), bias=True, stride=2)),
        Case("stride_gt_kernel_gaps", "edge", _convt((1, 2, 4, 5), (2, 3, 2, 2), stride=3)),
        Case("dilation2_op1", "edge", _convt((1, 3, 5, 5), (3, 2, 3, 3), dilation=2, output_padding=1,
                                             stride=1)),
        Case("padding_crops_all_border", "edge", _convt((1, 2, 6, 6), (2, 2, 3, 3), padding=2)),
        Case("empty_batch", "edge", _convt((0, 4, 5, 5), (4, 3, 3, 3))),
        Case("normal_f32_s2_p1_op1", "small",
             _convt((2, 8, 16, 16), (8, 6, 3, 3), stride=2, padding=1, output_padding=1), dist="normal"),
        Case("normal_f32_4x4_s2_p1_bias", "small",
             _convt((2, 16, 9, 11), (16, 8, 4, 4), bias=True, stride=2, padding=1), dist="normal"),
        Case("uniform_f32_odd_s3_d2", "small",
             _convt((1, 5, 13, 7), (5, 7, 3, 3), draw="uniform", stride=3, padding=2, output_padding=2,
                    dilation=2), dist="uniform"),
        Case("outliers_f32_groups4", "small",
             _convt((2, 8, 10, 10), (8, 3, 3, 3), draw="outliers", bias=True, groups=4, stride=2),
             dist="outliers"),
        Case("normal_f32_2x2_s2", "small", _convt((2, 32, 12, 12), (32, 16, 2, 2), stride=2), dist="normal"),
        Case("normal_f16", "small", _convt((2, 16, 11, 13), (16, 12, 3, 3), bias=True, stride=2, padding=1,
                                           output_padding=1, dtype=f16), dist="normal"),
        Case("uniform_bf16", "small",
             _convt((2, 12, 10, 9), (12, 8, 4, 4), draw="uniform", stride=2, padding=1, dtype=bf16),
             dist="uniform"),
        Case("perf_f32_4x4_s2_256_to_128", "full",
             _convt((16, 256, 28, 28), (256, 128, 4, 4), bias=True, stride=2, padding=1), dist="normal"),
        Case("perf_f32_2x2_s2_unet_128_to_64", "full",
             _convt((32, 128, 56, 56), (128, 64, 2, 2), stride=2), dist="normal"),
        Case("perf_f16_3x3_s2_op1_64_to_32", "full",
             _convt((16, 64, 64, 64), (64, 32, 3, 3), stride=2, padding=1, output_padding=1, dtype=f16),
             dist="normal"),
        Case("perf_bf16_4x4_s2_512_to_256", "full",
             _convt((32, 512, 14, 14), (512, 256, 4, 4), bias=True, stride=2, padding=1, dtype=bf16),
             dist="normal"),
        Case("perf_f32_3x3_s1_p1_64ch_112", "full",
             _convt((16, 64, 112, 112), (64, 64, 3, 3), padding=1), dist="normal"),
    ]


def _out_size(size, k, stride, padding, output_padding, dilation):
    return (size - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1


def cost(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    n, cin, h, w = input.shape
    _, cout_g, kh, kw = weight.shape
    cout = cout_g * groups
    ho = _out_size(h, kh, stride, padding, output_padding, dilation)
    wo = _out_size(w, kw, stride, padding, output_padding, dilation)
    out = n * cout * ho * wo
    moved = input.numel() + weight.numel() + (0 if bias is None else bias.numel()) + out
    return {"flops": 2 * input.numel() * cout_g * kh * kw, "bytes": moved * input.element_size()}
