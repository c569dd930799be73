import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_sub_gelu(input, other, alpha=1, approximate="none", out=None):
    # KernelBenchX's 'none' branch computes 0.5*r*erf(r/sqrt(2)), which is not GELU (the "1 +" is
    # missing); kbx computes the GELU the task names (see compat.note).
    result = F.gelu(input - alpha * other, approximate=approximate)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(x, y, out_shape=None, out_dtype=torch.float32, **kwargs):
    def make(c):
        a = x(c)
        b = y(c) if callable(y) else y
        kw = dict(kwargs)
        if out_shape is not None:
            kw["out"] = torch.full(out_shape, -5.0, dtype=out_dtype, device=c.device)
        return (a, b), kw
    return make


def _special(dtype, **kwargs):
    # special values minus 0 and minus small offsets; no infinities (F.gelu(-inf) is NaN on the CPU)
    def make(c):
        s = c.special(dtype, inf=False)
        d = torch.tensor([0.0, 0.25, -1.0], dtype=dtype, device=c.device)
        return (s.repeat(3), d.repeat_interleave(s.numel())), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    rn = lambda *s, dtype=f32, std=1.0: (lambda c: c.randn(*s, dtype=dtype, std=std))
    un = lambda *s, dtype=f32: (lambda c: c.uniform(*s, low=-6.0, high=6.0, dtype=dtype))
    ol = lambda *s, dtype=f32: (lambda c: c.outliers(*s, dtype=dtype))
    return [
        Case("special_f32", "edge", _special(f32)),
        Case("special_f16_tanh", "edge", _special(f16, approximate="tanh")),
        Case("special_bf16", "edge", _special(bf16, alpha=2)),
        Case("empty_f32", "edge", _make(rn(0, 7), rn(0, 7))),
        Case("scalar_other_f32", "edge", _make(rn(513), 0.5, alpha=-2)),
        Case("out_f32", "edge", _make(rn(31, 29), rn(29), out_shape=(31, 29), alpha=0.5),
             dist="normal"),
        Case("normal_f32", "small", _make(rn(1000, 37), rn(1000, 37)), dist="normal"),
        Case("normal_f32_tanh_bcast", "small",
             _make(rn(3, 5, 1021, std=2.0), rn(5, 1), alpha=0.5, approximate="tanh"), dist="normal"),
        Case("uniform_f16", "small", _make(un(4097, dtype=f16), un(4097, dtype=f16), alpha=0.25),
             dist="uniform"),
        Case("outliers_bf16_tanh", "small",
             _make(ol(333, 65, dtype=bf16), ol(333, 65, dtype=bf16), approximate="tanh"),
             dist="outliers"),
        Case("outliers_f32_out", "small",
             _make(ol(127, 127), ol(127), out_shape=(127, 127), alpha=-1.5), dist="outliers"),
        Case("uniform_f32_tanh_out", "small",
             _make(un(7919), un(7919), out_shape=(7919,), approximate="tanh"), dist="uniform"),
        Case("perf_f32_16M", "full", _make(rn(4096, 4096), rn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M_tanh_out", "full",
             _make(rn(8192, 8192), rn(8192, 8192), out_shape=(8192, 8192), alpha=0.5,
                   approximate="tanh"), dist="normal"),
        Case("perf_bf16_64M_bcast", "full",
             _make(rn(8192, 8192, dtype=bf16), rn(8192, dtype=bf16), alpha=2), dist="normal"),
        Case("perf_f16_odd_tanh", "full",
             _make(un(12289, 3001, dtype=f16), un(12289, 3001, dtype=f16), approximate="tanh"),
             dist="uniform"),
    ]


def cost(input, other, alpha=1, approximate="none", out=None):
    shape = torch.broadcast_shapes(input.shape, other.shape) if isinstance(other, torch.Tensor) \
        else input.shape
    n = 1
    for s in shape:
        n *= s
    reads = input.numel() * input.element_size()
    if isinstance(other, torch.Tensor):
        reads += other.numel() * other.element_size()
    return {"flops": 22 * n, "bytes": reads + n * input.element_size()}
