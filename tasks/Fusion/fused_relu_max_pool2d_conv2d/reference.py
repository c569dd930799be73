import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_relu_max_pool2d_conv2d(input, weight, bias=None, conv_stride=1, conv_padding=0,
                                 conv_dilation=1, conv_groups=1, pool_kernel_size=2, pool_stride=None,
                                 pool_padding=0, pool_dilation=1, pool_ceil_mode=False, inplace=False):
    x = F.conv2d(input, weight, bias, stride=conv_stride, padding=conv_padding, dilation=conv_dilation,
                 groups=conv_groups)
    x = F.max_pool2d(x, kernel_size=pool_kernel_size, stride=pool_stride, padding=pool_padding,
                     dilation=pool_dilation, ceil_mode=pool_ceil_mode)
    return F.relu(x, inplace=inplace)


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
        return (x, w, b), kw_
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("zero_input_f32", "edge", _make(2, 3, (6, 7), 4, 3, dist="zeros")),
        Case("pool_whole_map_f32", "edge", _make(3, 4, (5, 5), 5, 3, pool_kernel_size=3)),
        Case("ceil_mode_partial_windows_f32", "edge",
             _make(2, 3, (8, 9), 4, 2, pool_kernel_size=3, pool_stride=2, pool_ceil_mode=True)),
        Case("empty_batch_f32", "edge", _make(0, 3, (8, 8), 4, 3)),
        Case("normal_f32", "small", _make(2, 8, (17, 19), 16, 3, conv_padding=1), dist="normal"),
        Case("normal_f32_overlap_padded_pool", "small",
             _make(1, 6, (23, 21), 10, 3, conv_stride=2, conv_padding=1, pool_kernel_size=3,
                   pool_stride=2, pool_padding=1), dist="normal"),
        Case("uniform_f32_groups_pool_dilation", "small",
             _make(3, 8, (15, 13), 12, (3, 5), groups=4, conv_padding=(1, 2), pool_kernel_size=2,
                   pool_stride=1, pool_dilation=2, inplace=True), dist="uniform"),
        Case("uniform_f16", "small", _make(2, 4, (16, 16), 8, 3, dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16_rect_pool", "small",
             _make(2, 5, (14, 18), 7, 3, dtype=bf16, dist="outliers", conv_dilation=2,
                   pool_kernel_size=(2, 3), pool_stride=(2, 1), pool_ceil_mode=True),
             dist="outliers"),
        Case("outliers_f32_no_bias", "small",
             _make(4, 3, (11, 12), 6, 2, dist="outliers", bias=False, pool_kernel_size=2),
             dist="outliers"),
        Case("perf_f32_vgg_112", "full", _make(32, 64, (112, 112), 64, 3, conv_padding=1),
             dist="normal"),
        Case("perf_bf16_resnet_stem_pool", "full",
             _make(32, 128, (56, 56), 128, 3, dtype=bf16, conv_padding=1, pool_kernel_size=3,
                   pool_stride=2, pool_padding=1), dist="normal"),
        Case("perf_f16_56_256", "full", _make(16, 256, (56, 56), 256, 3, dtype=f16, conv_padding=1),
             dist="normal"),
        Case("perf_f32_odd_ceil", "full",
             _make(8, 96, (99, 77), 160, 3, conv_padding=1, pool_kernel_size=3, pool_stride=2,
                   pool_ceil_mode=True, dist="uniform"), dist="uniform"),
    ]



def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_len(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _pool_len(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    if ceil_mode:
        out = -(-span // s) + 1
        if (out - 1) * s >= size + p:
            out -= 1
        return out
    return span // s + 1


def cost(input, weight, bias=None, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
         pool_kernel_size=2, pool_stride=None, pool_padding=0, pool_dilation=1, pool_ceil_mode=False,
         inplace=False):
    n, _, h, w = input.shape
    cout, cin_g, kh, kw = weight.shape
    cs, cp, cd = _pair(conv_stride), _pair(conv_padding), _pair(conv_dilation)
    ho, wo = (_conv_len(h, kh, cs[0], cp[0], cd[0]), _conv_len(w, kw, cs[1], cp[1], cd[1]))
    pk = _pair(pool_kernel_size)
    ps = _pair(pool_stride) if pool_stride is not None else pk
    pp, pd = _pair(pool_padding), _pair(pool_dilation)
    po = (_pool_len(ho, pk[0], ps[0], pp[0], pd[0], pool_ceil_mode),
          _pool_len(wo, pk[1], ps[1], pp[1], pd[1], pool_ceil_mode))
    conv_out = n * cout * ho * wo
    pooled = n * cout * po[0] * po[1]
    size = input.element_size()
    reads = input.numel() + weight.numel() + (bias.numel() if bias is not None else 0)
    return {"flops": 2 * conv_out * cin_g * kh * kw + pooled * pk[0] * pk[1],
            "bytes": (reads + pooled) * size}
