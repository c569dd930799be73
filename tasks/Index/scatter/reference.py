import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def scatter(input, dim, index, src):
    return input.scatter(dim, index, src)


def _values(c, shape, dist, dtype):
    if dtype in (torch.int32, torch.int64):
        return c.randint(-1000, 1000, *shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-5, high=5, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype)
    return c.randn(*shape, dtype=dtype)


def _distinct_index(c, in_shape, dim, idx_shape):
    """Index of shape idx_shape whose entries along dim are distinct positions in [0, in_shape[dim])
    (a prefix of a random permutation per line), so no two sources land on the same element."""
    d = dim % len(in_shape)
    full = list(idx_shape)
    full[d] = in_shape[d]
    keys = torch.rand(full, generator=c.gen, device=c.device)
    return torch.argsort(keys, dim=d).narrow(d, 0, idx_shape[d]).contiguous()


def _case(in_shape, dim, idx_shape, src_shape=None, dist="normal", dtype=F32):
    def make(c):
        x = _values(c, in_shape, dist, dtype)
        index = _distinct_index(c, in_shape, dim, idx_shape)
        src = _values(c, src_shape or idx_shape, dist, dtype)
        return (x, dim, index, src), {}
    return make


def _specials(c):
    s = c.special(F32)
    n = s.numel()
    x = torch.zeros(3, n, device=c.device)
    index = _distinct_index(c, (3, n), 1, (3, n))
    return (x, 1, index, s.repeat(3, 1)), {}


def cases():
    return [
        Case("specials", "edge", _specials),
        Case("empty_index", "edge", _case((4, 6), 0, (0, 6))),
        Case("index_narrower_than_src", "edge", _case((6, 9), 1, (4, 3), src_shape=(5, 7))),
        Case("one_d_full_permutation", "edge", _case((33,), 0, (33,))),
        Case("normal_dim0", "small", _case((64, 48), 0, (20, 48)), dist="normal"),
        Case("normal_dim1", "small", _case((37, 129), 1, (37, 50)), dist="normal"),
        Case("normal_3d_last", "small", _case((4, 32, 256), 2, (4, 32, 64)), dist="normal"),
        Case("uniform_neg_dim", "small", _case((5, 61, 17), -2, (5, 30, 17), dist="uniform"), dist="uniform"),
        Case("outliers_partial", "small", _case((300, 77), 0, (100, 60), src_shape=(120, 77), dist="outliers"),
             dist="outliers"),
        Case("bf16_dim1", "small", _case((64, 500), 1, (64, 125), dtype=BF16), dist="normal"),
        Case("int64_dim0", "small", _case((129, 65), 0, (64, 65), dtype=torch.int64), dist="uniform"),
        Case("perf_rows_f32", "full", _case((4, 4096, 4096), 2, (4, 4096, 1024)), dist="normal"),
        Case("perf_dim0_f32", "full", _case((8192, 8192), 0, (2048, 8192)), dist="normal"),
        Case("perf_full_perm_bf16", "full", _case((16384, 4096), 1, (16384, 4096), dtype=BF16), dist="normal"),
        Case("perf_middle_f16", "full", _case((64, 2048, 512), 1, (64, 512, 512), dtype=F16), dist="normal"),
    ]


def cost(input, dim, index, src):
    es = input.element_size()
    n = input.numel()
    k = index.numel()
    # read input and write the output once each, read index and the used part of src
    return {"flops": 0, "bytes": 2 * n * es + k * (8 + es)}
