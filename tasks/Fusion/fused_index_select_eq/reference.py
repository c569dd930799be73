import torch

from kbx_worker.casegen import Case


def fused_index_select_eq(input, dim, index, other, *, out=None):
    result = torch.eq(torch.index_select(input, dim, index), other)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, shape, dim, n_index, other="half", other_shape=None, idx_dtype=torch.int64,
          with_out=False):
    """other: "half" (a tensor equal to the selection at about half the positions, drawn afresh
    elsewhere, of other_shape when broadcast) or a number."""
    def make(c):
        x = draw(c, shape)
        index = c.randint(0, shape[dim], n_index, dtype=idx_dtype)
        sel = torch.index_select(x, dim, index)
        if other == "half":
            if other_shape is None:
                o = torch.where(c.bernoulli(sel.shape, p=0.5), sel, draw(c, sel.shape))
            else:
                o = draw(c, other_shape)
                o = torch.where(c.bernoulli(other_shape, p=0.5),
                                sel[tuple(slice(0, s) for s in other_shape)], o)
        else:
            o = other
        kw = {"out": torch.zeros(sel.shape, dtype=torch.bool, device=c.device)} if with_out else {}
        return (x, dim, index, o), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _small_ints(dtype=torch.int64):
    return lambda c, shape: c.randint(-5, 6, shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    """Few distinct values, so fresh draws also collide."""
    return lambda c, shape: (c.randint(-4, 5, shape).to(torch.float32) * 0.25).to(dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(c):
    s = c.special(torch.float32)
    x = torch.stack([s, -s, s.flip(0)])                 # (3, 18)
    index = torch.tensor([2, 0, 0, 1], device=c.device)
    other = torch.stack([s.flip(0), s, -s, s])          # NaN never equal, -0 == 0
    return (x, 0, index, other), {}


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    return [
        Case("special_values", "edge", _special),
        Case("scalar_other_int", "edge", _make(_small_ints(), (4, 7), 1, 5, other=2)),
        Case("scalar_other_float", "edge", _make(_uniform(), (6, 5), 0, 9, other=0.25)),
        Case("empty_index", "edge", _make(_normal(), (4, 3), 0, 0)),
        Case("negative_dim_int32_index", "edge",
             _make(_small_ints(torch.int32), (3, 4, 5), -1, 7, idx_dtype=torch.int32)),
        Case("ints_dim0", "small", _make(_small_ints(), (128, 64), 0, 32), dist="uniform"),
        Case("normal_f32_dim1", "small", _make(_normal(), (97, 130), 1, 211), dist="normal"),
        Case("uniform_bf16_bcast_other", "small",
             _make(_uniform(bf16), (40, 50, 3), 1, 77, other_shape=(1, 77, 3)), dist="uniform"),
        Case("uniform_f32_3d_dim0_out", "small",
             _make(_uniform(), (9, 31, 33), 0, 20, with_out=True), dist="uniform"),
        Case("outliers_f32_dim0", "small", _make(_outliers(), (300, 100), 0, 150),
             dist="outliers"),
        Case("perf_f32_rows", "full", _make(_normal(), (16384, 4096), 0, 8192), dist="normal"),
        Case("perf_int32_cols_scalar", "full",
             _make(_small_ints(torch.int32), (4096, 16384), 1, 8192, other=3), dist="uniform"),
        Case("perf_bf16_repeat_cols_out", "full",
             _make(_uniform(bf16), (8192, 8192), 1, 16384, with_out=True), dist="uniform"),
        Case("perf_int64_rows", "full", _make(_small_ints(), (32768, 1024), 0, 32768),
             dist="uniform"),
    ]


def cost(input, dim, index, other, *, out=None):
    sel = index.numel() * (input.numel() // max(input.shape[dim], 1))
    other_bytes = other.numel() * other.element_size() if isinstance(other, torch.Tensor) else 0
    return {"flops": sel,
            "bytes": index.numel() * index.element_size() + sel * (input.element_size() + 1)
            + other_bytes}
