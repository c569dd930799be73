import torch

from kbx_worker.casegen import Case


def fused_mul_sub(input, other_mul, other_sub, alpha=1, out=None):
    result = input * other_mul - alpha * other_sub
    if out is not None:
        out.copy_(result)
        return out
    return result


def _three(x, y, z, **kwargs):
    """make() for tensors drawn by x, y, z (callables of the ctx, or plain Python numbers)."""
    def make(c):
        vals = [v(c) if callable(v) else v for v in (x, y, z)]
        return tuple(vals), dict(kwargs)
    return make


def _with_out(x, y, z, shape, dtype=torch.float32, **kwargs):
    def make(c):
        vals = [v(c) if callable(v) else v for v in (x, y, z)]
        kw = dict(kwargs)
        kw["out"] = torch.full(shape, -5.0, dtype=dtype, device=c.device)
        return tuple(vals), kw
    return make


def _special_product(dtype):
    # every special value against every multiplier and subtrahend of a small fixed set
    def make(c):
        s = c.special(dtype)
        n = s.numel()
        m = torch.tensor([0.0, -1.0, 2.0, 0.5], dtype=dtype, device=c.device)
        x = s.repeat(4)
        y = m.repeat_interleave(n)
        z = s.flip(0).repeat(4)
        return (x, y, z), {"alpha": 0.5}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    rn = lambda *s, dtype=f32: (lambda c: c.randn(*s, dtype=dtype))
    un = lambda *s, dtype=f32: (lambda c: c.uniform(*s, low=-4.0, high=4.0, dtype=dtype))
    ol = lambda *s, dtype=f32: (lambda c: c.outliers(*s, dtype=dtype))
    return [
        Case("special_f32", "edge", _special_product(f32)),
        Case("special_f16", "edge", _special_product(f16)),
        Case("special_bf16", "edge", _special_product(bf16)),
        Case("empty_f32", "edge", _three(rn(0, 7), rn(0, 7), rn(0, 7))),
        Case("scalar_operands_f32", "edge", _three(rn(257, 3), 2.5, -1.25, alpha=3)),
        Case("out_f32", "edge", _with_out(rn(31, 29), rn(31, 29), rn(29), (31, 29), alpha=-2.0),
             dist="normal"),
        Case("normal_f32", "small", _three(rn(1000, 37), rn(1000, 37), rn(1000, 37)), dist="normal"),
        Case("normal_bcast_f32", "small", _three(rn(3, 5, 1021), rn(5, 1), rn(1021), alpha=0.75),
             dist="normal"),
        Case("uniform_f16", "small", _three(un(4097, dtype=f16), un(4097, dtype=f16),
                                             un(4097, dtype=f16), alpha=2), dist="uniform"),
        Case("outliers_bf16", "small", _three(ol(333, 65, dtype=bf16), ol(333, 65, dtype=bf16),
                                               ol(65, dtype=bf16), alpha=-1), dist="outliers"),
        Case("outliers_f32_out", "small",
             _with_out(ol(127, 127), ol(127, 127), 0.5, (127, 127), alpha=1.5), dist="outliers"),
        Case("uniform_f32_scalar_mul", "small", _three(un(7919), -3.0, un(7919)), dist="uniform"),
        Case("perf_f32_16M", "full", _three(rn(4096, 4096), rn(4096, 4096), rn(4096, 4096)),
             dist="normal"),
        Case("perf_f32_64M_out", "full",
             _with_out(rn(8192, 8192), rn(8192, 8192), rn(8192, 8192), (8192, 8192), alpha=0.5),
             dist="normal"),
        Case("perf_bf16_64M_bcast", "full",
             _three(rn(8192, 8192, dtype=bf16), rn(8192, dtype=bf16), rn(8192, 1, dtype=bf16),
                    alpha=2), dist="normal"),
        Case("perf_f16_odd", "full", _three(un(12289, 3001, dtype=f16), un(12289, 3001, dtype=f16),
                                             un(12289, 3001, dtype=f16)), dist="uniform"),
    ]


def cost(input, other_mul, other_sub, alpha=1, out=None):
    shape = torch.broadcast_shapes(*[t.shape for t in (input, other_mul, other_sub)
                                     if isinstance(t, torch.Tensor)])
    n = 1
    for s in shape:
        n *= s
    size = input.element_size()
    reads = sum(t.numel() * t.element_size() for t in (input, other_mul, other_sub)
                if isinstance(t, torch.Tensor))
    return {"flops": 3 * n, "bytes": reads + n * size}
