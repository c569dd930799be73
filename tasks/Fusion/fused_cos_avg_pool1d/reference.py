import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_cos_avg_pool1d(input: torch.Tensor, kernel_size: int, stride: int = None,
                         padding: int = 0, ceil_mode: bool = False,
                         count_include_pad: bool = True) -> torch.Tensor:
    return F.avg_pool1d(torch.cos(input), kernel_size=kernel_size, stride=stride, padding=padding,
                        ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def _make(draw, shape, kernel_size, **kwargs):
    return lambda c: ((draw(c, shape), kernel_size), dict(kwargs))


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=2.0)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-10.0, high=10.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(dtype):
    return lambda c: ((c.special(dtype).reshape(1, 1, -1), 2), {})


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("special_f32", "edge", _special(f32)),
        Case("special_bf16", "edge", _special(bf16)),
        Case("kernel_1", "edge", _make(n, (2, 3, 7), 1)),
        Case("ceil_mode_pad_partial_window", "edge",
             _make(n, (1, 2, 10), 4, stride=3, padding=1, ceil_mode=True)),
        Case("ceil_mode_no_pad_count", "edge",
             _make(n, (1, 2, 10), 4, stride=3, padding=2, ceil_mode=True,
                   count_include_pad=False)),
        Case("input_2d", "edge", _make(n, (3, 11), 3, stride=2, padding=1)),
        Case("empty_batch", "edge", _make(n, (0, 4, 9), 3)),
        Case("normal_f32", "small", _make(n, (4, 16, 257), 4, stride=2, padding=1),
             dist="normal"),
        Case("normal_f16_default_stride", "small", _make(_normal(f16), (3, 33, 301), 3),
             dist="normal"),
        Case("uniform_bf16_ceil", "small",
             _make(_uniform(bf16), (2, 7, 1001), 5, stride=3, padding=2, ceil_mode=True),
             dist="uniform"),
        Case("uniform_f32_no_pad_count", "small",
             _make(_uniform(), (5, 9, 613), 6, stride=4, padding=3, count_include_pad=False),
             dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), (2, 32, 513), 2), dist="outliers"),
        Case("outliers_f16_ceil", "small",
             _make(_outliers(f16), (8, 8, 199), 7, stride=5, padding=3, ceil_mode=True),
             dist="outliers"),
        Case("perf_f32_67M", "full", _make(n, (64, 256, 4096), 4), dist="normal"),
        Case("perf_bf16_same", "full",
             _make(_normal(bf16), (32, 512, 8192), 3, stride=1, padding=1),
             dist="normal"),
        Case("perf_f16_ceil", "full",
             _make(_uniform(f16), (128, 128, 2048), 8, stride=4, padding=2, ceil_mode=True,
                   count_include_pad=False), dist="uniform"),
    ]


def cost(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    stride = stride or kernel_size
    length = input.shape[-1] + 2 * padding - kernel_size
    lo = (-(-length // stride) if ceil_mode else length // stride) + 1
    outs = input.numel() // max(input.shape[-1], 1) * lo
    size = input.element_size()
    return {"flops": 15 * input.numel() + kernel_size * outs,
            "bytes": (input.numel() + outs) * size}
