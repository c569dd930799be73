import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_relu_batch_norm_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                                 running_mean=None, running_var=None, bn_weight=None, bn_bias=None,
                                 training=False, momentum=0.1, eps=1e-05, inplace=False):
    conv_result = F.conv2d(input, weight, bias=bias, stride=stride, padding=padding, dilation=dilation,
                           groups=groups)
    bn_result = F.batch_norm(conv_result, running_mean, running_var, bn_weight, bn_bias,
                             training=training, momentum=momentum, eps=eps)
    return F.relu(bn_result, inplace=inplace)


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
            kw_["groups"] = groups
        return (x, w, b), kw_
    return make


def _bn(conv_make, stats=True, affine=True, stat_dtype=torch.float32, **bn_kwargs):
    """Adds batch-norm arguments to a conv case: running statistics near the true ones (so eval
    mode normalizes to a sensible range), gamma around 1 and beta around 0."""
    def make(c):
        args, kw = conv_make(c)
        x, w, b = args
        cout = w.shape[0]
        if stats:
            kw["running_mean"] = (c.randn(cout) * 0.2).to(stat_dtype)
            kw["running_var"] = c.uniform(cout, low=0.5, high=1.5).to(stat_dtype)
        if affine:
            kw["bn_weight"] = c.uniform(cout, low=0.5, high=1.5).to(stat_dtype)
            kw["bn_bias"] = (c.randn(cout) * 0.2).to(stat_dtype)
        kw.update(bn_kwargs)
        return (x, w, b), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("zero_input_eval_f32", "edge", _bn(_make(2, 3, (6, 7), 4, 3, dist="zeros"))),
        Case("zero_input_train_f32", "edge",
             _bn(_make(2, 3, (6, 7), 4, 3, dist="zeros", bias=False), training=True)),
        Case("train_one_pixel_f32", "edge", _bn(_make(3, 4, (3, 3), 5, 3), training=True)),
        Case("eval_no_affine_f32", "edge", _bn(_make(2, 6, (5, 5), 3, 1), affine=False)),
        Case("train_no_stats_f32", "edge",
             _bn(_make(2, 4, (7, 8), 6, 3), stats=False, training=True, inplace=True)),
        Case("normal_f32_eval", "small", _bn(_make(2, 8, (17, 19), 16, 3, padding=1)),
             dist="normal"),
        Case("normal_f32_train", "small",
             _bn(_make(3, 6, (13, 11), 10, 3, stride=2, padding=2, dilation=2), training=True,
                 momentum=0.3), dist="normal"),
        Case("uniform_f32_groups_train", "small",
             _bn(_make(3, 8, (15, 13), 12, (3, 5), groups=4, padding=(1, 2)), training=True,
                 eps=1e-3), dist="uniform"),
        Case("uniform_f16_eval", "small",
             _bn(_make(2, 4, (16, 16), 8, 3, dtype=f16, dist="uniform")), dist="uniform"),
        Case("outliers_bf16_train", "small",
             _bn(_make(2, 5, (14, 18), 7, 3, dtype=bf16, dist="outliers", stride=(1, 2)),
                 training=True), dist="outliers"),
        Case("outliers_f32_eval", "small",
             _bn(_make(4, 3, (11, 12), 6, 2, dist="outliers", bias=False), eps=1e-2),
             dist="outliers"),
        Case("perf_f32_resnet_56_eval", "full", _bn(_make(32, 256, (56, 56), 256, 3, padding=1)),
             dist="normal"),
        Case("perf_bf16_28x28_512_train", "full",
             _bn(_make(16, 512, (28, 28), 512, 3, dtype=bf16, padding=1), training=True),
             dist="normal"),
        Case("perf_f16_stride2_112_eval", "full",
             _bn(_make(32, 64, (112, 112), 128, 3, dtype=f16, stride=2, padding=1)),
             dist="normal"),
        Case("perf_f32_odd_train", "full",
             _bn(_make(8, 192, (75, 75), 192, 5, groups=4, padding=2, dist="uniform"),
                 training=True), dist="uniform"),
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


def cost(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, running_mean=None,
         running_var=None, bn_weight=None, bn_bias=None, training=False, momentum=0.1, eps=1e-05,
         inplace=False):
    flops, reads, out = _conv_cost(input, weight, bias, stride, padding, dilation)
    params = sum(t.numel() * t.element_size() for t in (running_mean, running_var, bn_weight, bn_bias)
                 if t is not None)
    updates = 0
    if training and running_mean is not None:
        updates = (running_mean.numel() * running_mean.element_size()
                   + running_var.numel() * running_var.element_size())
    bn_flops = (8 if training else 4) * out
    return {"flops": flops + bn_flops, "bytes": reads + params + updates + out * input.element_size()}
