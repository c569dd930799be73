import torch

from kbx_worker.casegen import Case


def fused_hstack_div(tensors, divisor, *, rounding_mode=None, out=None):
    result = torch.div(torch.hstack(tensors), divisor, rounding_mode=rounding_mode)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _clear_quotients(x, divisor):
    """Move elements of x (the stacked floating input) whose quotient lies within 0.02 of an
    integer, stepping by at least 0.05 of the divisor; 0.5 * divisor as the last resort."""
    d = divisor.double() if isinstance(divisor, torch.Tensor) else torch.tensor(float(divisor))
    d = d.to(x.device).expand_as(x) if x.dim() else d.to(x.device)
    eps = torch.finfo(x.dtype).eps
    for _ in range(8):
        q = x.double() / d
        near = (q - q.round()).abs() < 0.02
        if not near.any():
            return x
        step = torch.maximum(0.05 * d.abs(), 4 * eps * x.double().abs())
        x = torch.where(near, (x.double() + step).to(x.dtype), x)
    q = x.double() / d
    return torch.where((q - q.round()).abs() < 0.02, (0.5 * d).to(x.dtype), x)


def _make(draw, shapes, divisor, with_out=False, **kwargs):
    """shapes: the hstacked tensors' shapes; divisor: a number, or ("tensor", shape, draw_fn)."""
    def make(c):
        parts = [draw(c, s) for s in shapes]
        if isinstance(divisor, tuple):
            div = divisor[2](c, divisor[1]).to(parts[0].dtype)
        else:
            div = divisor
        kw = dict(kwargs)
        stacked = torch.hstack(parts)
        if kw.get("rounding_mode") and stacked.is_floating_point():
            stacked = _clear_quotients(stacked, div)
            sizes = [p.shape[0 if p.dim() == 1 else 1] for p in parts]
            parts = list(torch.split(stacked, sizes, dim=0 if stacked.dim() == 1 else 1))
            parts = [p.contiguous() for p in parts]
        if with_out:
            kw["out"] = torch.zeros_like(fused_hstack_div(parts, div, rounding_mode=kw.get(
                "rounding_mode")))
        return (parts, div), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=3.0)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-20.0, high=20.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _ints(c, shape):
    return c.randint(-1000, 1000, shape)


def _scale(c, shape):
    """Divisors in +-[0.5, 4), rounded to a quarter (exact in every floating dtype)."""
    mag = (c.uniform(shape, low=0.5, high=4.0) * 4).round() / 4
    return torch.where(c.bernoulli(shape, p=0.3), -mag, mag)


def _nonzero_ints(c, shape):
    v = c.randint(1, 13, shape)
    return torch.where(c.bernoulli(shape, p=0.5), -v, v)


def _zero_divisors(c):
    a = torch.tensor([[1.0, -1.0, 0.0], [5.5, -5.5, 2.0]], device=c.device)
    b = torch.tensor([[3.0], [-0.5]], device=c.device)
    div = torch.tensor([0.0, 0.0, 0.0, 2.0], device=c.device)
    return ([a, b], div), {"rounding_mode": "floor"}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("vectors_true_div", "edge", _make(n, [(5,), (3,), (0,)], 2.0)),
        Case("zero_divisor_floor", "edge", _zero_divisors),
        Case("zero_divisor_true", "edge",
             lambda c: (([c.randn(2, 2), torch.zeros(2, 1, device=c.device)], 0.0), {})),
        Case("int_floor_negative", "edge",
             _make(_ints, [(4, 3), (4, 2)], ("tensor", (1, 5), _nonzero_ints),
                   rounding_mode="floor")),
        Case("int_trunc_negative", "edge",
             _make(_ints, [(4, 3), (4, 2)], ("tensor", (1, 5), _nonzero_ints),
                   rounding_mode="trunc")),
        Case("int_true_div_to_f32", "edge", _make(_ints, [(3, 4), (3, 1)], 7)),
        Case("single_tensor", "edge", _make(n, [(6, 7)], -0.75)),
        Case("normal_f32_tensor_divisor", "small",
             _make(n, [(128, 64), (128, 33)], ("tensor", (1, 97), _scale)), dist="normal"),
        Case("normal_bf16_floor", "small",
             _make(_normal(bf16), [(100, 40), (100, 60), (100, 1)], 0.75, rounding_mode="floor"),
             dist="normal"),
        Case("uniform_f16_trunc_tensor", "small",
             _make(_uniform(f16), [(31, 17, 5), (31, 9, 5)], ("tensor", (31, 26, 1), _scale),
                   rounding_mode="trunc"), dist="uniform"),
        Case("uniform_f32_floor_scalar", "small",
             _make(_uniform(), [(513,), (1000,), (7,)], -2.5, rounding_mode="floor"),
             dist="uniform"),
        Case("uniform_int64_floor", "small",
             _make(_ints, [(200, 30), (200, 50)], ("tensor", (80,), _nonzero_ints),
                   rounding_mode="floor"), dist="uniform"),
        Case("outliers_f32_true", "small",
             _make(_outliers(), [(90, 100), (90, 200)], ("tensor", (90, 1), _scale)),
             dist="outliers"),
        Case("outliers_f32_trunc", "small",
             _make(_outliers(), [(64, 64), (64, 65)], 1.25, rounding_mode="trunc"),
             dist="outliers"),
        Case("out_f32_floor", "small",
             _make(n, [(50, 20), (50, 21)], ("tensor", (1, 41), _scale), with_out=True,
                   rounding_mode="floor"), dist="normal"),
        Case("perf_f32_four_blocks", "full", _make(n, [(8192, 2048)] * 4, 3.0), dist="normal"),
        Case("perf_bf16_floor_tensor", "full",
             _make(_normal(bf16), [(16384, 1024)] * 3, ("tensor", (1, 3072), _scale),
                   rounding_mode="floor"), dist="normal"),
        Case("perf_int64_floor_out", "full",
             _make(_ints, [(8192, 4096), (8192, 4096)], 7, with_out=True,
                   rounding_mode="floor"), dist="uniform"),
        Case("perf_f32_trunc_odd", "full",
             _make(_uniform(), [(12289, 1500), (12289, 1501)], -1.5, rounding_mode="trunc"),
             dist="uniform"),
    ]


def cost(tensors, divisor, *, rounding_mode=None, out=None):
    n = sum(t.numel() for t in tensors)
    size = tensors[0].element_size()
    out_size = 4 if (rounding_mode is None and not tensors[0].is_floating_point()) else size
    div = divisor.numel() * divisor.element_size() if isinstance(divisor, torch.Tensor) else 0
    return {"flops": 2 * n, "bytes": n * (size + out_size) + div}
