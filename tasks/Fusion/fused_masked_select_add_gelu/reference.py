import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_masked_select_add_gelu(input, mask, other, *, alpha=1, approximate="none", out=None):
    z = torch.masked_select(input, mask)
    s = torch.add(z, other, alpha=alpha)
    y = F.gelu(s, approximate=approximate)
    if out is not None:
        out.copy_(y)
        return out
    return y


def _make(make_input, mask_shape=None, keep=0.5, other="tensor", with_out=False, **kwargs):
    """other: 'tensor' (one value per selected element), 'one' (a 1-element tensor) or a number."""
    def make(c):
        x = make_input(c)
        m = c.bernoulli(*(mask_shape if mask_shape is not None else x.shape), p=keep)
        k = int(torch.broadcast_to(m, x.shape).sum().item())
        if other == "tensor":
            o = c.randn(k, dtype=x.dtype)
        elif other == "one":
            o = c.randn(1, dtype=x.dtype)
        else:
            o = other
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.full((k,), -5.0, dtype=x.dtype, device=c.device)
        return (x, m, o), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32_all", "edge",
             _make(lambda c: c.special(f32, inf=False), keep=1.0, other=0.0)),
        Case("special_f16_tanh", "edge",
             _make(lambda c: c.special(f16, inf=False), keep=0.7, other="one",
                   approximate="tanh")),
        Case("special_bf16", "edge", _make(lambda c: c.special(bf16, inf=False), keep=1.0,
                                           other=-1.5, alpha=2)),
        Case("none_selected_f32", "edge", _make(lambda c: c.randn(17, 33), keep=0.0, other=1.0)),
        Case("empty_input_f32", "edge", _make(lambda c: c.randn(0, 5), other="one")),
        Case("out_f32", "edge", _make(lambda c: c.randn(31, 29), with_out=True, alpha=0.5),
             dist="normal"),
        Case("normal_f32", "small", _make(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_bcast_mask_tanh", "small",
             _make(lambda c: c.randn(3, 5, 1021), mask_shape=(1021,), keep=0.3, other="one",
                   approximate="tanh"), dist="normal"),
        Case("uniform_f16", "small",
             _make(lambda c: c.uniform(4097, low=-6, high=6, dtype=f16), keep=0.8, alpha=-1),
             dist="uniform"),
        Case("outliers_bf16_scalar", "small",
             _make(lambda c: c.outliers(333, 65, dtype=bf16), other=0.75, alpha=2), dist="outliers"),
        Case("outliers_f32_out_tanh", "small",
             _make(lambda c: c.outliers(7919), keep=0.1, with_out=True, approximate="tanh"),
             dist="outliers"),
        Case("perf_f32_64M", "full", _make(lambda c: c.randn(8192, 8192), other=0.5), dist="normal"),
        Case("perf_f32_16M_tensor_out", "full",
             _make(lambda c: c.randn(4096, 4096), keep=0.9, with_out=True, alpha=0.5),
             dist="normal"),
        Case("perf_bf16_64M_tanh", "full",
             _make(lambda c: c.randn(8192, 8192, dtype=bf16), keep=0.25, other="one",
                   approximate="tanh"), dist="normal"),
        Case("perf_f16_bcast_mask", "full",
             _make(lambda c: c.uniform(12289, 3001, low=-5, high=5, dtype=f16), mask_shape=(3001,),
                   keep=0.6, other=-0.25), dist="uniform"),
    ]


def cost(input, mask, other, *, alpha=1, approximate="none", out=None):
    k = int(torch.broadcast_to(mask, input.shape).sum().item())
    size = input.element_size()
    other_bytes = other.numel() * size if isinstance(other, torch.Tensor) else 0
    return {"flops": 22 * k,
            "bytes": input.numel() * size + mask.numel() + other_bytes + k * size}
