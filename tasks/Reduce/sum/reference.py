import torch

from kbx_worker.casegen import Case


def sum(input, dim, keepdim=False, dtype=None):
    return torch.sum(input, dim, keepdim=keepdim, dtype=dtype)


def _one(make_input, dim, **kwargs):
    return lambda c: ((make_input(c), dim), kwargs)


def _special_pairs(dtype):
    """(n, n, 2): the last dimension holds every ordered pair of special values."""
    def make(c):
        s = c.special(dtype)
        n = s.numel()
        return torch.stack([s[:, None].expand(n, n), s[None, :].expand(n, n)], dim=-1).contiguous()
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_pairs_f32", "edge", _one(_special_pairs(f32), -1)),
        Case("special_pairs_f16", "edge", _one(_special_pairs(f16), 2, keepdim=True)),
        Case("special_pairs_bf16_to_f32", "edge", _one(_special_pairs(bf16), -1, dtype=f32)),
        Case("empty_rows_f32", "edge", _one(lambda c: c.randn(0, 5), 0)),
        Case("empty_reduce_f32", "edge", _one(lambda c: c.randn(4, 0), 1)),
        Case("vector_f32", "edge", _one(lambda c: c.randn(1031), 0)),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37), 1), dist="normal"),
        Case("normal_f32_dims02_keepdim", "small", _one(lambda c: c.randn(3, 5, 1021), (0, 2), keepdim=True),
             dist="normal"),
        Case("normal_f32_all", "small", _one(lambda c: c.randn(255, 253), (0, 1)), dist="normal"),
        Case("normal_f32_4d", "small", _one(lambda c: c.randn(2, 3, 17, 19), (1, -1)), dist="normal"),
        Case("uniform_f16_dim0", "small", _one(lambda c: c.uniform(4097, 13, low=-1, high=1, dtype=f16), 0),
             dist="uniform"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=bf16), -1), dist="outliers"),
        Case("outliers_bf16_to_f32", "small",
             _one(lambda c: c.outliers(65, 333, dtype=bf16), 0, dtype=f32), dist="outliers"),
        Case("uniform_int32", "small", _one(lambda c: c.randint(-1000, 1000, 129, 257, dtype=torch.int32), 0),
             dist="uniform"),
        Case("perf_f32_rows", "full", _one(lambda c: c.randn(8192, 8192), 1), dist="normal"),
        Case("perf_bf16_cols", "full", _one(lambda c: c.randn(8192, 8192, dtype=bf16), 0), dist="normal"),
        Case("perf_f32_all", "full", _one(lambda c: c.randn(8192, 8192), (0, 1)), dist="normal"),
        Case("perf_f16_middle_to_f32", "full",
             _one(lambda c: c.randn(64, 4096, 256, dtype=f16), 1, dtype=f32), dist="normal"),
    ]


def cost(input, dim, keepdim=False, dtype=None):
    out = torch.sum(torch.empty(input.shape, dtype=input.dtype, device="meta"), dim, keepdim=keepdim,
                    dtype=dtype)
    return {"flops": input.numel(),
            "bytes": input.numel() * input.element_size() + out.numel() * out.element_size()}
