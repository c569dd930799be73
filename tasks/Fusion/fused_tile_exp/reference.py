import torch

from kbx_worker.casegen import Case


def fused_tile_exp(input, dims, *, out=None):
    tiled = input.unsqueeze(0).expand(*dims, *input.shape)
    result = torch.exp(tiled)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(make_input, dims, with_out=False):
    def make(c):
        x = make_input(c)
        kw = {}
        if with_out:
            kw["out"] = torch.full((*dims, *x.shape), -5.0, dtype=x.dtype, device=c.device)
        return (x, tuple(dims)), kw
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_f32", "edge", _make(lambda c: c.special(f32), (2,))),
        Case("special_f16", "edge", _make(lambda c: c.special(f16), (3, 2))),
        Case("special_bf16_out", "edge", _make(lambda c: c.special(bf16), (2,), with_out=True)),
        Case("zero_repeats_f32", "edge", _make(lambda c: c.randn(5, 7), (0,))),
        Case("empty_input_f32", "edge", _make(lambda c: c.randn(0, 7), (3,))),
        Case("scalar_input_f32", "edge", _make(lambda c: c.randn(()), (4, 5))),
        Case("normal_f32", "small", _make(lambda c: c.randn(100, 37), (3,)), dist="normal"),
        Case("normal_f32_3d_dims", "small", _make(lambda c: c.randn(5, 103), (3, 1, 2)),
             dist="normal"),
        Case("uniform_f16", "small",
             _make(lambda c: c.uniform(1021, low=-12, high=10, dtype=f16), (2, 3)), dist="uniform"),
        Case("uniform_bf16_out", "small",
             _make(lambda c: c.uniform(33, 65, low=-80, high=80, dtype=bf16), (5,), with_out=True),
             dist="uniform"),
        Case("outliers_f32_out", "small",
             _make(lambda c: c.outliers(7, 333, scale=50.0), (3, 2), with_out=True),
             dist="outliers"),
        Case("perf_f32_8x4M", "full", _make(lambda c: c.randn(2048, 2048), (8,)), dist="normal"),
        Case("perf_f32_6x8M_out", "full",
             _make(lambda c: c.randn(2048, 4096), (2, 3), with_out=True), dist="normal"),
        Case("perf_bf16_4x16M", "full",
             _make(lambda c: c.uniform(4096, 4096, low=-4, high=4, dtype=bf16), (4,)),
             dist="uniform"),
        Case("perf_f16_odd", "full",
             _make(lambda c: c.randn(3001, 1999, dtype=f16), (3, 1, 5)), dist="normal"),
    ]


def cost(input, dims, *, out=None):
    reps = 1
    for d in dims:
        reps *= d
    n_out = reps * input.numel()
    return {"flops": 10 * input.numel(),
            "bytes": (input.numel() + n_out) * input.element_size()}
