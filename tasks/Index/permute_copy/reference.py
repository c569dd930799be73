import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def permute_copy(input: torch.Tensor, dims: list) -> torch.Tensor:
    return input.permute(dims).clone()


def _values(c, shape, dist, dtype):
    if dtype in (torch.int32, torch.int64):
        return c.randint(-1000, 1000, *shape, dtype=dtype)
    if dist == "uniform":
        return c.uniform(*shape, low=-5, high=5, dtype=dtype)
    if dist == "outliers":
        return c.outliers(*shape, dtype=dtype)
    return c.randn(*shape, dtype=dtype)


def _case(shape, dims, dist="normal", dtype=F32):
    return lambda c: ((_values(c, shape, dist, dtype), list(dims)), {})


def _specials(c):
    s = c.special(F32)
    return (s.view(1, -1).repeat(3, 1) * torch.tensor([[1.0], [-1.0], [0.5]], device=c.device), [1, 0]), {}


def cases():
    return [
        Case("specials", "edge", _specials),
        Case("identity_1d", "edge", _case((17,), [0])),
        Case("scalar", "edge", _case((), [])),
        Case("empty_dim", "edge", _case((3, 0, 5), [2, 0, 1])),
        Case("unit_dims", "edge", _case((1, 7, 1, 3), [3, 1, 0, 2])),
        Case("normal_2d", "small", _case((61, 129), [1, 0]), dist="normal"),
        Case("normal_3d", "small", _case((5, 33, 41), [2, 0, 1]), dist="normal"),
        Case("normal_4d_reverse", "small", _case((4, 8, 16, 32), [3, 2, 1, 0]), dist="normal"),
        Case("uniform_4d", "small", _case((4, 8, 16, 32), [3, 0, 2, 1], dist="uniform"), dist="uniform"),
        Case("outliers_neg_dims", "small", _case((6, 7, 8, 9), [-1, -3, -2, -4], dist="outliers"),
             dist="outliers"),
        Case("bf16_heads", "small", _case((2, 64, 8, 32), [0, 2, 1, 3], dtype=BF16), dist="normal"),
        Case("int64_5d", "small", _case((3, 4, 5, 6, 7), [4, 2, 0, 3, 1], dtype=torch.int64), dist="uniform"),
        Case("perf_transpose_f32", "full", _case((8192, 8192), [1, 0]), dist="normal"),
        Case("perf_nchw_to_nhwc_f32", "full", _case((32, 256, 56, 56), [0, 2, 3, 1]), dist="normal"),
        Case("perf_heads_bf16", "full", _case((16, 2048, 32, 64), [0, 2, 1, 3], dtype=BF16), dist="normal"),
        Case("perf_reverse_f16", "full", _case((64, 64, 64, 64), [3, 2, 1, 0], dtype=F16), dist="normal"),
    ]


def cost(input, dims):
    n = input.numel()
    return {"flops": 0, "bytes": 2 * n * input.element_size()}
