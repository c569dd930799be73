import math

import torch

from kbx_worker.casegen import Case


def fftn(input, s=None, dim=None, norm=None, out=None):
    return torch.fft.fftn(input, s=s, dim=dim, norm=norm, out=out)


def _complex(c, *shape):
    return torch.complex(c.randn(*shape), c.randn(*shape))


def _call(make, **kwargs):
    return lambda c: ((make(c),), dict(kwargs))


def _impulse(c):
    x = torch.zeros(6, 10, device=c.device)
    x[0, 0] = 1.0
    return x


def _with_out(c):
    x = c.randn(24, 20)
    return (x,), {"norm": "ortho", "out": _complex(c, 24, 20)}


def cases():
    return [
        Case("impulse", "edge", _call(_impulse)),
        Case("constant_forward", "edge", _call(lambda c: torch.full((5, 3, 4), 2.5, device=c.device), norm="forward")),
        Case("single_element", "edge", _call(lambda c: c.randn(1, 1))),
        Case("scalar", "edge", _call(lambda c: c.randn(()))),
        Case("crop_s", "edge", _call(lambda c: c.randn(16, 16), s=(8, 8))),
        Case("pad_s_last_dims", "edge", _call(lambda c: c.randn(3, 5, 7), s=(8, 16))),
        Case("one_dim", "edge", _call(lambda c: c.randn(6, 33), dim=(0,))),
        Case("out_ortho", "edge", _with_out, dist="normal"),
        Case("normal_2d", "small", _call(lambda c: c.randn(37, 64)), dist="normal"),
        Case("uniform_3d_mixed_radix", "small", _call(lambda c: c.uniform(9, 10, 12, low=-1, high=1)),
             dist="uniform"),
        Case("prime_sizes_ortho", "small", _call(lambda c: c.randn(97, 101), norm="ortho"), dist="normal"),
        Case("complex_batched_2d", "small", _call(lambda c: _complex(c, 3, 48, 40), dim=(-2, -1)), dist="normal"),
        Case("complex_1d_long", "small", _call(lambda c: _complex(c, 8191), norm="forward"), dist="normal"),
        Case("outliers_2d", "small", _call(lambda c: c.outliers(64, 63)), dist="outliers"),
        Case("outliers_pad_s", "small", _call(lambda c: c.outliers(30, 50), s=(32, 64), dim=(0, 1)),
             dist="outliers"),
        Case("perf_c64_2d_4096", "full", _call(lambda c: _complex(c, 4096, 4096)), dist="normal"),
        Case("perf_f32_3d_256", "full", _call(lambda c: c.randn(256, 256, 256)), dist="normal"),
        Case("perf_c64_batched_2d", "full", _call(lambda c: _complex(c, 64, 512, 512), dim=(-2, -1), norm="ortho"),
             dist="normal"),
        Case("perf_f32_2d_odd", "full", _call(lambda c: c.randn(3000, 3001)), dist="normal"),
    ]


def cost(input, s=None, dim=None, norm=None, out=None):
    if dim is None:
        dim = tuple(range(input.dim())) if s is None else tuple(range(input.dim() - len(s), input.dim()))
    dim = [d % max(input.dim(), 1) for d in dim]
    shape = list(input.shape)
    for i, d in enumerate(dim):
        if s is not None:
            shape[d] = s[i]
    total = math.prod(shape)
    length = math.prod(shape[d] for d in dim) if dim else 1
    flops = int(5 * total * math.log2(length)) if length > 1 else total
    return {"flops": flops, "bytes": input.numel() * input.element_size() + total * 8}
