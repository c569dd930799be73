import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_add_mul_groupnorm(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    m = torch.mul(torch.add(input1, input2), input2)
    result = F.group_norm(m, num_groups=num_groups, weight=weight, bias=bias, eps=eps)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, shape, groups, shape2=None, affine=True, with_out=False, **kwargs):
    def make(c):
        x1, x2 = draw(c, shape), draw(c, shape2 or shape)
        dtype = x1.dtype
        ch = shape[1]
        w = c.randn(ch, dtype=dtype) if affine else None
        b = c.randn(ch, dtype=dtype) if affine else None
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros(shape, dtype=dtype, device=c.device)
        return (x1, x2, w, b, groups), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-2.0, high=3.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(c):
    x1 = c.finite_special(torch.float32).reshape(1, 5, 3)
    x2 = c.uniform(1, 5, 3, low=0.5, high=1.5)
    return (x1, x2, c.randn(5), c.randn(5), 5), {}


def _nan_group(c):
    x1 = c.randn(2, 6, 4)
    x1[1, 2, 3] = float("nan")
    return (x1, c.randn(2, 6, 4), c.randn(6), c.randn(6), 3), {}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_finite", "edge", _special),
        Case("nan_poisons_group", "edge", _nan_group),
        Case("empty_batch", "edge", _make(_normal(), (0, 4, 5, 5), 2)),
        Case("normal_f32", "small", _make(_normal(), (3, 12, 17, 19), 4), dist="normal"),
        Case("normal_f32_no_affine_bcast", "small",
             _make(_normal(), (2, 16, 31, 33), 4, shape2=(1, 16, 1, 1), affine=False),
             dist="normal"),
        Case("normal_f16_one_group", "small", _make(_normal(f16), (4, 8, 25, 23), 1),
             dist="normal"),
        Case("uniform_bf16_groups_eq_channels", "small", _make(_uniform(bf16), (2, 10, 41, 29), 10),
             dist="uniform"),
        Case("uniform_f32_3d_eps", "small", _make(_uniform(), (5, 24, 301), 6, eps=1e-3),
             dist="uniform"),
        Case("uniform_f32_2d", "small", _make(_uniform(), (513, 96), 3), dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), (2, 12, 37, 41), 3), dist="outliers"),
        Case("outliers_bf16_bcast_row", "small",
             _make(_outliers(bf16), (3, 8, 33, 35), 2, shape2=(35,)), dist="outliers"),
        Case("out_f32", "small", _make(_normal(), (2, 6, 21, 23), 3, with_out=True), dist="normal"),
        Case("perf_f32_resnet", "full", _make(_normal(), (32, 256, 64, 64), 32), dist="normal"),
        Case("perf_bf16_bcast", "full",
             _make(_normal(bf16), (16, 512, 56, 56), 32, shape2=(1, 512, 1, 1)), dist="normal"),
        Case("perf_f16_large_groups", "full", _make(_uniform(f16), (8, 128, 128, 128), 8),
             dist="uniform"),
        Case("perf_f32_out", "full", _make(_normal(), (64, 320, 32, 32), 32, with_out=True),
             dist="normal"),
    ]


def cost(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    n = input1.numel()
    size = input1.element_size()
    params = sum(t.numel() * t.element_size() for t in (weight, bias) if t is not None)
    return {"flops": 10 * n,
            "bytes": 2 * n * size + input2.numel() * input2.element_size() + params}
