import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.masked_select(input, mask)


def _values(c, shape, dist, dtype):
    if dtype in (torch.int32, torch.int64):
        return c.randint(-1000, 1000, *shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-5, high=5, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype)
    return c.randn(*shape, dtype=dtype)


def _case(in_shape, mask_shape, p=0.5, dist="normal", dtype=F32):
    return lambda c: ((_values(c, in_shape, dist, dtype), c.bernoulli(*mask_shape, p=p)), {})


def _specials(c):
    s = c.special(F32)
    return (s, c.bernoulli(s.numel(), p=0.7)), {}


def cases():
    return [
        Case("specials", "edge", _specials),
        Case("all_false", "edge", _case((9, 13), (9, 13), p=0.0)),
        Case("all_true", "edge", _case((9, 13), (9, 13), p=1.0)),
        Case("empty", "edge", _case((0, 5), (0, 5))),
        Case("scalar_mask", "edge", _case((4, 6), (), p=1.0)),
        Case("input_broadcast", "edge", _case((1, 7), (5, 7))),
        Case("normal_same_shape", "small", _case((64, 128), (64, 128)), dist="normal"),
        Case("normal_mask_bcast", "small", _case((2, 31, 40), (1, 31, 1), p=0.3), dist="normal"),
        Case("normal_sparse", "small", _case((4099,), (4099,), p=0.02), dist="normal"),
        Case("uniform_dense", "small", _case((61, 257), (61, 257), p=0.95, dist="uniform"), dist="uniform"),
        Case("outliers_bf16", "small", _case((300, 77), (300, 77), dist="outliers", dtype=BF16),
             dist="outliers"),
        Case("normal_f16_rowmask", "small", _case((100, 300), (100, 1), dtype=F16), dist="normal"),
        Case("int64", "small", _case((7, 9, 11), (7, 9, 11), dtype=torch.int64), dist="uniform"),
        Case("perf_half_f32", "full", _case((8192, 8192), (8192, 8192)), dist="normal"),
        Case("perf_sparse_bf16", "full", _case((16384, 4096), (16384, 4096), p=0.1, dtype=BF16),
             dist="normal"),
        Case("perf_rowmask_f32", "full", _case((4096, 8192), (4096, 1), p=0.5), dist="normal"),
        Case("perf_dense_f16", "full", _case((8192, 8192), (8192, 8192), p=0.9, dtype=F16), dist="normal"),
    ]


def cost(input, mask):
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    n = 1
    for s in shape:
        n *= s
    selected = int(mask.expand(shape).sum()) if n else 0
    es = input.element_size()
    return {"flops": n, "bytes": input.numel() * es + mask.numel() + selected * es}
