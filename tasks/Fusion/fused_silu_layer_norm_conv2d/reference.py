import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_silu_layer_norm_conv2d(x: torch.Tensor, weight: torch.Tensor, conv_weight: torch.Tensor,
                                 conv_bias: torch.Tensor = None, conv_stride: int = 1,
                                 conv_padding: int = 0, conv_dilation: int = 1, conv_groups: int = 1,
                                 ln_eps: float = 1e-05) -> torch.Tensor:
    conv_out = F.conv2d(x, conv_weight, bias=conv_bias, stride=conv_stride, padding=conv_padding,
                        dilation=conv_dilation, groups=conv_groups)
    normalized_out = F.layer_norm(conv_out, conv_out.shape[1:], eps=ln_eps)
    return F.silu(normalized_out)


def _draw(c, dist, shape, dtype, scale=1.0):
    if dist == "uniform":
        t = c.uniform(*shape, low=-math.sqrt(3.0), high=math.sqrt(3.0))
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    elif dist == "zeros":
        t = torch.zeros(shape, device=c.device)
    else:
        t = c.randn(*shape)
    return (t * scale).to(dtype)


def _make(n, cin, hw, cout, k, dtype=torch.float32, dist="normal", bias=True, groups=1, **kwargs):
    """input (n, cin, *hw), weight (cout, cin/groups, k, k) scaled to unit-size outputs."""
    def make(c):
        kh, kw = (k, k) if isinstance(k, int) else k
        x = _draw(c, dist, (n, cin, *hw), dtype)
        fan_in = cin // groups * kh * kw
        w = _draw(c, "normal", (cout, cin // groups, kh, kw), dtype, 1.0 / math.sqrt(fan_in))
        b = _draw(c, "normal", (cout,), dtype, 0.5) if bias else None
        kw_ = dict(kwargs)
        if groups != 1:
            kw_["conv_groups"] = groups
        return (x, None, w, b), kw_
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("zero_input_no_bias_f32", "edge", _make(2, 3, (6, 7), 4, 3, dist="zeros", bias=False)),
        Case("zero_input_bias_only_f32", "edge", _make(2, 3, (6, 7), 4, 3, dist="zeros")),
        Case("one_pixel_f32", "edge", _make(3, 4, (3, 3), 5, 3)),
        Case("empty_batch_f32", "edge", _make(0, 3, (8, 8), 4, 3)),
        Case("normal_f32", "small", _make(2, 8, (17, 19), 16, 3, conv_padding=1), dist="normal"),
        Case("normal_f32_stride_dilation", "small",
             _make(1, 6, (23, 21), 10, 3, conv_stride=2, conv_padding=2, conv_dilation=2),
             dist="normal"),
        Case("uniform_f32_groups_rect", "small",
             _make(3, 8, (15, 13), 12, (3, 5), groups=4, conv_padding=(1, 2), ln_eps=1e-3),
             dist="uniform"),
        Case("uniform_f16", "small", _make(2, 4, (16, 16), 8, 3, dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16", "small", _make(2, 5, (14, 18), 7, 3, dtype=bf16, dist="outliers",
                                             conv_stride=(1, 2)), dist="outliers"),
        Case("outliers_f32_no_bias", "small",
             _make(4, 3, (11, 12), 6, 2, dist="outliers", bias=False), dist="outliers"),
        Case("perf_f32_resnet_56", "full", _make(32, 256, (56, 56), 256, 3, conv_padding=1),
             dist="normal"),
        Case("perf_bf16_28x28_512", "full",
             _make(16, 512, (28, 28), 512, 3, dtype=bf16, conv_padding=1), dist="normal"),
        Case("perf_f16_stride2_112", "full",
             _make(32, 64, (112, 112), 128, 3, dtype=f16, conv_stride=2, conv_padding=1),
             dist="normal"),
        Case("perf_f32_odd_groups", "full",
             _make(8, 192, (75, 75), 192, 5, groups=4, conv_padding=2, dist="uniform"),
             dist="uniform"),
    ]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_cost(input, weight, bias, stride, padding, dilation):
    """(flops, bytes read, output elements) of a conv2d with integer or pair arguments."""
    n, cin, h, w = input.shape
    cout, cin_g, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = n * cout * ho * wo
    reads = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)
    return 2 * out * cin_g * kh * kw, reads * input.element_size(), out


def cost(x, weight, conv_weight, conv_bias=None, conv_stride=1, conv_padding=0, conv_dilation=1,
         conv_groups=1, ln_eps=1e-05):
    flops, reads, out = _conv_cost(x, conv_weight, conv_bias, conv_stride, conv_padding, conv_dilation)
    return {"flops": flops + 12 * out, "bytes": reads + out * x.element_size()}
