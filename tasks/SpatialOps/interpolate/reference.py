import torch

from kbx_worker.casegen import Case


def interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None):
    if input.device.type == "cpu" and input.dtype in (torch.float16, torch.bfloat16):
        # Older PyTorch releases lack some half-precision CPU resize kernels: compute in float32, round once.
        out = torch.nn.functional.interpolate(input.float(), size=size, scale_factor=scale_factor, mode=mode,
                                              align_corners=align_corners)
        return out.to(input.dtype)
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode=mode,
                                           align_corners=align_corners)


def _resize(x_shape, draw="randn", dtype=torch.float32, **kwargs):
    def make(c):
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-1, high=1)
        elif draw == "outliers":
            x = c.outliers(*x_shape)
        elif draw == "special":
            x = c.special(torch.float32).reshape(x_shape)
        else:
            x = c.randn(*x_shape)
        return (x.to(dtype),), kwargs
    return make


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("nearest_up2_size", "edge", _resize((2, 3, 4, 4), size=(8, 8), mode="nearest")),
        Case("bilinear_scale2", "edge", _resize((2, 3, 8, 8), scale_factor=2.0, mode="bilinear",
                                                align_corners=False)),
        Case("bicubic_up2", "edge", _resize((2, 3, 8, 8), size=(16, 16), mode="bicubic", align_corners=False)),
        Case("nearest_special_values", "edge", _resize((1, 1, 3, 6), draw="special", size=(5, 11),
                                                       mode="nearest")),
        Case("bilinear_align_corners_identity", "edge", _resize((1, 2, 5, 7), size=(5, 7), mode="bilinear",
                                                                align_corners=True)),
        Case("bilinear_to_one_pixel", "edge", _resize((2, 2, 6, 5), size=1, mode="bilinear",
                                                      align_corners=True)),
        Case("bicubic_from_one_row", "edge", _resize((1, 2, 1, 4), size=(3, 9), mode="bicubic",
                                                     align_corners=False)),
        Case("linear_1d", "edge", _resize((2, 3, 10), size=17, mode="linear", align_corners=False)),
        Case("area_downsample", "edge", _resize((2, 3, 10, 9), size=(4, 5), mode="area")),
        Case("nearest_exact_down", "edge", _resize((1, 3, 13, 9), size=(29, 4), mode="nearest-exact")),
        Case("empty_batch", "edge", _resize((0, 3, 4, 4), scale_factor=2.0, mode="bilinear",
                                            align_corners=False)),
        Case("normal_f32_bilinear_odd", "small",
             _resize((2, 8, 17, 23), size=(31, 40), mode="bilinear", align_corners=False), dist="normal"),
        Case("normal_f32_bilinear_down_align", "small",
             _resize((2, 8, 37, 41), size=(19, 13), mode="bilinear", align_corners=True), dist="normal"),
        Case("uniform_f32_bicubic_scale1p5", "small",
             _resize((2, 4, 21, 19), draw="uniform", scale_factor=1.5, mode="bicubic", align_corners=False),
             dist="uniform"),
        Case("outliers_f32_bicubic_align", "small",
             _resize((1, 6, 16, 20), draw="outliers", size=(27, 33), mode="bicubic", align_corners=True),
             dist="outliers"),
        Case("normal_f32_nearest_down", "small", _resize((2, 5, 100, 31), size=(37, 16), mode="nearest"),
             dist="normal"),
        Case("normal_f32_nearest_scale", "small", _resize((2, 4, 13, 28), scale_factor=(2.0, 0.5),
                                                          mode="nearest"), dist="normal"),
        Case("normal_f32_trilinear", "small",
             _resize((1, 3, 7, 9, 11), size=(12, 13, 17), mode="trilinear", align_corners=False),
             dist="normal"),
        Case("normal_f32_linear_scale", "small",
             _resize((4, 16, 301), scale_factor=1.75, mode="linear", align_corners=False), dist="normal"),
        Case("uniform_f32_area", "small", _resize((2, 6, 61, 47), draw="uniform", size=(23, 17), mode="area"),
             dist="uniform"),
        Case("normal_f16_bilinear", "small",
             _resize((2, 8, 24, 24), size=(48, 48), mode="bilinear", align_corners=False, dtype=f16),
             dist="normal"),
        Case("outliers_bf16_bicubic", "small",
             _resize((1, 8, 19, 17), draw="outliers", size=(40, 33), mode="bicubic", align_corners=False,
                     dtype=bf16), dist="outliers"),
        Case("normal_bf16_nearest", "small", _resize((2, 8, 33, 57), size=(64, 48), mode="nearest", dtype=bf16),
             dist="normal"),
        Case("perf_f32_bilinear_fpn_x2", "full",
             _resize((32, 256, 56, 56), scale_factor=2.0, mode="bilinear", align_corners=False),
             dist="normal"),
        Case("perf_f16_nearest_x2", "full",
             _resize((16, 128, 128, 128), scale_factor=2.0, mode="nearest", dtype=f16), dist="normal"),
        Case("perf_bf16_bicubic_x2", "full",
             _resize((16, 32, 256, 256), size=(512, 512), mode="bicubic", align_corners=False, dtype=bf16),
             dist="normal"),
        Case("perf_f32_bilinear_down_align", "full",
             _resize((32, 64, 224, 224), size=(112, 112), mode="bilinear", align_corners=True),
             dist="uniform"),
        Case("perf_f32_trilinear_x2", "full",
             _resize((4, 32, 32, 64, 64), scale_factor=2.0, mode="trilinear", align_corners=False),
             dist="normal"),
    ]


def cost(input, size=None, scale_factor=None, mode='nearest', align_corners=None):
    x = torch.empty(input.shape, device="meta", dtype=input.dtype)
    try:
        out = torch.nn.functional.interpolate(x, size=size, scale_factor=scale_factor, mode=mode,
                                              align_corners=align_corners).numel()
    except (NotImplementedError, RuntimeError):
        dims = input.dim() - 2
        if size is not None:
            sizes = [size] * dims if isinstance(size, int) else list(size)
        else:
            sf = [scale_factor] * dims if isinstance(scale_factor, (int, float)) else list(scale_factor)
            sizes = [int(s * f) for s, f in zip(input.shape[2:], sf)]
        out = input.shape[0] * input.shape[1]
        for s in sizes:
            out *= s
    taps = {"nearest": 0, "nearest-exact": 0, "linear": 2, "bilinear": 4, "trilinear": 8, "bicubic": 16}
    flops = 2 * taps.get(mode, 1) * out if mode != "area" else input.numel() + out
    return {"flops": flops, "bytes": (input.numel() + out) * input.element_size()}
