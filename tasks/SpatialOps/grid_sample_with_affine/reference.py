import math

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def grid_sample_with_affine(input: torch.Tensor, theta: torch.Tensor, size: torch.Size, mode: str = 'bilinear',
                            padding_mode: str = 'zeros', align_corners: bool = False) -> torch.Tensor:
    # KernelBenchX casts theta to float32 (theta.float()); the cast to the input's dtype is the same for
    # float32 inputs and keeps the float64 shadow in float64.
    grid = F.affine_grid(theta.to(input.dtype), size, align_corners=align_corners)
    return F.grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


def _random_theta(c, n, dims, angle=0.6, scale=(0.6, 1.4), shift=0.3):
    """Rotation (about one axis for 3-D) times anisotropic scale plus translation."""
    a = c.uniform(n, low=-angle, high=angle)
    cos, sin = torch.cos(a), torch.sin(a)
    theta = torch.zeros(n, dims, dims + 1, device=c.device)
    theta[:, 0, 0], theta[:, 0, 1] = cos, -sin
    theta[:, 1, 0], theta[:, 1, 1] = sin, cos
    if dims == 3:
        theta[:, 2, 2] = 1.0
    s = c.uniform(n, dims, low=scale[0], high=scale[1])
    theta[:, :, :dims] *= s.unsqueeze(-1)
    theta[:, :, dims] = c.uniform(n, dims, low=-shift, high=shift)
    return theta


def _axis_theta(c, n, in_sizes, out_sizes, align_corners, scales):
    """Axis-aligned theta (per-axis scale from `scales`, output size == input size) with a translation chosen
    so that every sample point lies a quarter pixel (plus an integer shift of -1..1) from a pixel center, for
    'nearest'."""
    dims = len(in_sizes)
    theta = torch.zeros(n, dims, dims + 1, dtype=torch.float64, device=c.device)
    for b in range(n):
        for d in range(dims):
            s = scales[int(c.randint(0, len(scales), 1).item())]
            lin, lout = in_sizes[d], out_sizes[d]
            shift = 0.25 + int(c.randint(-1, 2, 1).item())
            if align_corners:
                # with lin == lout: u(j) = (s*(2j/(lin-1) - 1) + t + 1)/2*(lin-1) = s*j + offset
                t = 2.0 * shift / (lin - 1) - 1.0 + s
            else:
                # u(j) = ((s*((2j+1)/lout - 1) + t + 1)*lin - 1)/2 with lin == lout: u = s*j + offset
                t = (2.0 * shift + 1.0 - s * (1.0 - lin)) / lin - 1.0
            theta[b, d, d] = s
            theta[b, d, dims] = t
    return theta.to(torch.float32)


def _affine(x_shape, out_spatial, draw="randn", nearest=False, scales=(1.0, -1.0, 2.0, -2.0), **kwargs):
    def make(c):
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-1, high=1)
        elif draw == "outliers":
            x = c.outliers(*x_shape)
        else:
            x = c.randn(*x_shape)
        n, ch = x_shape[:2]
        dims = len(x_shape) - 2
        if nearest:
            rev_in = tuple(reversed(x_shape[2:]))   # theta rows act on (x, y[, z]) = (W, H[, D])
            rev_out = tuple(reversed(out_spatial))
            theta = _axis_theta(c, n, rev_in, rev_out, kwargs.get("align_corners", False), scales)
            kw = dict(kwargs, mode="nearest")
        else:
            theta = _random_theta(c, n, dims)
            kw = kwargs
        return (x, theta, (n, ch) + tuple(out_spatial)), kw
    return make


def _identity(x_shape, **kwargs):
    def make(c):
        n = x_shape[0]
        theta = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], device=c.device).expand(n, 2, 3).contiguous()
        return (c.randn(*x_shape), theta, tuple(x_shape)), kwargs
    return make


def cases():
    return [
        Case("identity_align_true", "edge", _identity((2, 3, 5, 7), align_corners=True)),
        Case("identity_align_false", "edge", _identity((2, 3, 6, 4))),
        Case("rotate_zeros", "edge", _affine((1, 3, 8, 8), (8, 8))),
        Case("rotate_border_resize", "edge", _affine((2, 2, 6, 9), (4, 11), padding_mode="border")),
        Case("nearest_flip_reflection", "edge",
             _affine((2, 3, 7, 7), (7, 7), nearest=True, padding_mode="reflection")),
        Case("output_one_pixel", "edge", _affine((2, 3, 5, 5), (1, 1))),
        Case("normal_f32", "small", _affine((4, 3, 32, 32), (32, 32)), dist="normal"),
        Case("normal_f32_resize_align", "small",
             _affine((2, 8, 21, 27), (17, 33), align_corners=True), dist="normal"),
        Case("uniform_f32_border", "small",
             _affine((3, 4, 25, 19), (25, 19), draw="uniform", padding_mode="border"), dist="uniform"),
        Case("outliers_f32_reflection_align", "small",
             _affine((2, 5, 24, 30), (20, 20), draw="outliers", padding_mode="reflection",
                     align_corners=True), dist="outliers"),
        Case("normal_f32_nearest_zeros", "small", _affine((3, 4, 23, 29), (23, 29), nearest=True),
             dist="normal"),
        Case("normal_f32_nearest_border_align", "small",
             _affine((2, 4, 17, 17), (17, 17), nearest=True, scales=(1.0, -1.0), padding_mode="border",
                     align_corners=True), dist="normal"),
        Case("normal_f32_5d", "small", _affine((2, 3, 8, 10, 12), (7, 9, 11)), dist="normal"),
        Case("perf_f32_stn_32x64x128x128", "full", _affine((32, 64, 128, 128), (128, 128)), dist="normal"),
        Case("perf_f32_augment_64x3x224x224_border_align", "full",
             _affine((64, 3, 224, 224), (224, 224), draw="uniform", padding_mode="border", align_corners=True),
             dist="uniform"),
        Case("perf_f32_upscale_16x128x64x64_to_96", "full",
             _affine((16, 128, 64, 64), (96, 96), padding_mode="reflection"), dist="normal"),
        Case("perf_f32_nearest_32x64x112x112", "full",
             _affine((32, 64, 112, 112), (112, 112), nearest=True), dist="normal"),
        Case("perf_f32_5d_8x16x32x64x64", "full", _affine((8, 16, 32, 64, 64), (32, 64, 64)), dist="normal"),
    ]


def cost(input, theta, size, mode='bilinear', padding_mode='zeros', align_corners=False):
    dims = len(size) - 2
    out = math.prod(size)
    points = out // size[1]
    taps = 1 if mode == "nearest" else 2 ** dims
    es = input.element_size()
    return {"flops": 2 * taps * out + 2 * dims * (dims + 1) * points,
            "bytes": (input.numel() + theta.numel() + out) * es}
