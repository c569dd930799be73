import torch

from kbx_worker.casegen import Case


def ifftshift(input, dim=None):
    return torch.fft.ifftshift(input, dim)


def _call(make, dim=None):
    return lambda c: ((make(c),), {} if dim is None else {"dim": dim})


def _positions(c, *shape):
    """Distinct integers in a random order, so that every misplaced element shows."""
    n = 1
    for k in shape:
        n *= k
    return c.randperm(n).reshape(*shape)


def _complex(c, *shape):
    return torch.complex(c.randn(*shape), c.randn(*shape))


def cases():
    return [
        Case("even_1d", "edge", _call(lambda c: torch.arange(8, device=c.device))),
        Case("odd_1d", "edge", _call(lambda c: torch.arange(9, device=c.device))),
        Case("odd_2d", "edge", _call(lambda c: torch.arange(9, device=c.device).reshape(3, 3))),
        Case("odd_2d_dim0", "edge", _call(lambda c: torch.arange(15, device=c.device).reshape(3, 5), dim=0)),
        Case("3d_last_two", "edge", _call(lambda c: torch.arange(8, device=c.device).reshape(2, 2, 2), dim=(1, 2))),
        Case("length_one_dims", "edge", _call(lambda c: c.randn(1, 5, 1))),
        Case("empty", "edge", _call(lambda c: c.randn(0, 5))),
        Case("positions_3d", "small", _call(lambda c: _positions(c, 7, 10, 13)), dist="permutation"),
        Case("positions_neg_dims", "small", _call(lambda c: _positions(c, 5, 11, 12), dim=(-1, -3)),
             dist="permutation"),
        Case("normal_f32", "small", _call(lambda c: c.randn(64, 63)), dist="normal"),
        Case("normal_f32_dim1", "small", _call(lambda c: c.randn(33, 1021), dim=1), dist="normal"),
        Case("uniform_f16", "small", _call(lambda c: c.uniform(4, 31, 32, dtype=torch.float16), dim=(0, 2)),
             dist="uniform"),
        Case("outliers_f32", "small", _call(lambda c: c.outliers(127, 129)), dist="outliers"),
        Case("complex64", "small", _call(lambda c: _complex(c, 48, 81)), dist="normal"),
        Case("perf_f32_8192", "full", _call(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_c64_4096", "full", _call(lambda c: _complex(c, 4096, 4096)), dist="normal"),
        Case("perf_f16_batched_last_two", "full",
             _call(lambda c: c.randn(64, 1024, 1024, dtype=torch.float16), dim=(-2, -1)), dist="normal"),
        Case("perf_f32_odd", "full", _call(lambda c: c.randn(12289, 3001)), dist="normal"),
    ]


def cost(input, dim=None):
    return {"flops": 0, "bytes": 2 * input.numel() * input.element_size()}
