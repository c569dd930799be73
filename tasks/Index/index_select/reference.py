import torch

from kbx_worker.casegen import Case


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    return torch.index_select(input, dim, index)


def _sel(make_input, dim, make_index):
    return lambda c: ((make_input(c), dim, make_index(c)), {})


def _idx(*values):
    return lambda c: torch.tensor(values, dtype=torch.int64, device=c.device)


def _rand_idx(high, n, dtype=torch.int64):
    return lambda c: c.randint(0, high, n, dtype=dtype)


def _perm(n, keep=None, dtype=torch.int64):
    return lambda c: c.randperm(n)[:keep].to(dtype)


def cases():
    f32, f16, bf16, i32 = torch.float32, torch.float16, torch.bfloat16, torch.int32
    return [
        Case("rows_f32", "edge", _sel(lambda c: c.randn(6, 4), 0, _idx(0, 2, 5))),
        Case("cols_f32", "edge", _sel(lambda c: c.randn(3, 8), 1, _idx(1, 3, 7))),
        Case("last_dim_3d_f32", "edge", _sel(lambda c: c.randn(2, 3, 10), -1, _idx(9, 0, 4, 4, 0))),
        Case("repeat_reverse_f16", "edge", _sel(lambda c: c.randn(5, 3, dtype=f16), 0, _idx(4, 3, 2, 1, 0, 0, 4))),
        Case("special_values_f32", "edge", _sel(lambda c: c.special(f32), 0, _perm(18))),
        Case("special_values_bf16_int32_index", "edge", _sel(lambda c: c.special(bf16), 0, _perm(18, 11, i32))),
        Case("empty_index_f32", "edge",
             _sel(lambda c: c.randn(4, 5), 1, lambda c: torch.empty(0, dtype=torch.int64, device=c.device))),
        Case("empty_input_rows_f32", "edge", _sel(lambda c: c.randn(0, 7), 1, _idx(6, 1))),
        Case("normal_f32_last", "small", _sel(lambda c: c.randn(8, 32, 256), 2, _rand_idx(256, 64)),
                                               dist="normal"),
        Case("normal_f16_rows_repeats", "small", _sel(lambda c: c.randn(1000, 37, dtype=f16), 0,
                                                      _rand_idx(1000, 513)), dist="normal"),
        Case("uniform_bf16_middle_int32", "small",
             _sel(lambda c: c.uniform(3, 517, 21, low=-1, high=1, dtype=bf16), 1, _perm(517, 300, i32)),
             dist="uniform"),
        Case("outliers_f32_permute_rows", "small", _sel(lambda c: c.outliers(4097, 13), 0, _perm(4097)),
             dist="outliers"),
        Case("uniform_f16_cols", "small",
             _sel(lambda c: c.uniform(129, 255, dtype=f16), -1, _rand_idx(255, 1000)), dist="uniform"),
        Case("perf_bf16_embedding", "full",
             _sel(lambda c: c.randn(50257, 4096, dtype=bf16), 0, _rand_idx(50257, 16384)), dist="normal"),
        Case("perf_f32_cols", "full", _sel(lambda c: c.randn(8192, 8192), 1, _rand_idx(8192, 4096)),
             dist="normal"),
        Case("perf_f16_middle", "full",
             _sel(lambda c: c.randn(64, 2048, 512, dtype=f16), 1, _rand_idx(2048, 1024, i32)), dist="normal"),
        Case("perf_f32_permute_rows", "full", _sel(lambda c: c.randn(1 << 20, 64), 0, _perm(1 << 20)),
             dist="normal"),
    ]


def cost(input, dim, index):
    """The least traffic: the index, the output written once, and each distinct selected slice
    of the input read once (a repeated index reads the same slice: random indices with
    replacement select about 61-79% distinct ones in the full cases)."""
    if not input.dim():
        out = index.numel()
        return {"flops": 0, "bytes": 2 * out * input.element_size() + index.numel() * index.element_size()}
    slice_elems = input.numel() // max(input.shape[dim], 1)
    out = slice_elems * index.numel()
    distinct = torch.unique(index.reshape(-1)).numel() if index.numel() else 0
    nbytes = (out + slice_elems * distinct) * input.element_size() + index.numel() * index.element_size()
    return {"flops": 0, "bytes": nbytes}
