import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def expand_where(input, target_sizes, cond, other):
    expanded = input.expand(*target_sizes)
    return torch.where(cond, expanded, other)


def _values(c, shape, dist, dtype):
    if dist == "uniform":
        return c.uniform(*shape, low=-5, high=5, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype)
    return c.randn(*shape, dtype=dtype)


def _case(in_shape, target_sizes, cond_shape, other_shape, dist="normal", dtype=F32, p=0.5):
    def make(c):
        x = _values(c, in_shape, dist, dtype)
        cond = c.bernoulli(*cond_shape, p=p)
        other = _values(c, other_shape, dist, dtype)
        return (x, tuple(target_sizes), cond, other), {}
    return make


def _specials(c):
    s = c.special(F32)
    n = s.numel()
    return (s.view(1, n), (4, n), c.bernoulli(4, 1, p=0.5), s.flip(0).repeat(4, 1)), {}


def cases():
    return [
        Case("specials", "edge", _specials),
        Case("empty_rows", "edge", _case((1, 7), (0, 7), (0, 1), (0, 7))),
        Case("scalar_input", "edge", _case((), (5, 3), (5, 3), (5, 3))),
        Case("all_true", "edge", _case((1, 33), (9, 33), (9, 1), (9, 33), p=1.0)),
        Case("all_false", "edge", _case((1, 33), (9, 33), (9, 1), (9, 33), p=0.0)),
        Case("normal_rows", "small", _case((1, 512), (64, 512), (64, 1), (64, 512)), dist="normal"),
        Case("normal_minus_one", "small", _case((1, 129), (77, -1), (77, 129), (77, 129)), dist="normal"),
        Case("normal_new_dims", "small", _case((13, 1), (3, 5, 13, 17), (5, 1, 17), (3, 5, 13, 17)),
             dist="normal"),
        Case("uniform_other_bcast", "small", _case((1, 300), (101, 300), (101, 300), (300,), dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16", "small", _case((61, 1), (61, 257), (1, 257), (61, 257), dist="outliers",
                                             dtype=BF16), dist="outliers"),
        Case("normal_f16_sparse", "small", _case((1, 1, 64), (8, 31, 64), (8, 31, 1), (8, 31, 64),
                                                 dtype=F16, p=0.1), dist="normal"),
        Case("perf_rows_f32", "full", _case((1, 8192), (8192, 8192), (8192, 1), (8192, 8192)), dist="normal"),
        Case("perf_cols_bf16", "full", _case((4096, 1), (4096, 16384), (1, 16384), (4096, 16384), dtype=BF16),
             dist="normal"),
        Case("perf_3d_f32", "full", _case((1, 1, 4096), (64, 256, 4096), (64, 256, 1), (64, 256, 4096)),
             dist="normal"),
        Case("perf_elementwise_cond_f16", "full", _case((1, 8192), (8192, 8192), (8192, 8192), (8192, 8192),
                                                        dtype=F16), dist="normal"),
    ]


def _elements_read(t, picked):
    """How many elements of t (broadcast to picked's shape) a kernel must read: those that some
    picked output position takes."""
    pad = picked.dim() - t.dim()
    dims = tuple(i for i in range(picked.dim())
                 if i < pad or (t.shape[i - pad] == 1 and picked.shape[i] != 1))
    needed = picked.to(torch.uint8)
    if dims:
        needed = needed.amax(dim=dims)
    return int(needed.sum())


def cost(input, target_sizes, cond, other):
    x = input.expand(*target_sizes)
    shape = torch.broadcast_shapes(tuple(x.shape), cond.shape, other.shape)
    n = 1
    for s in shape:
        n *= s
    es = other.element_size()
    if n == 0:
        return {"flops": 0, "bytes": 0}
    # The least a kernel must move: cond, the input elements taken where it holds, the other
    # elements taken where it does not (a kernel may skip loading the rest), the output.
    take = cond.broadcast_to(shape)
    read = _elements_read(input, take) * es + _elements_read(other, ~take) * es
    return {"flops": n, "bytes": cond.numel() + read + n * es}
