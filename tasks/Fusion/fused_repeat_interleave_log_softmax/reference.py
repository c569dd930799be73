import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_repeat_interleave_log_softmax(input, repeats, dim=None, *, output_size=None, dtype=None,
                                        out=None):
    repeated = torch.repeat_interleave(input, repeats, dim=dim, output_size=output_size)
    if dtype is not None:
        repeated = repeated.to(dtype)
    # dim=None flattens, and log_softmax's implicit choice for a 1-D tensor is dim 0
    output = F.log_softmax(repeated, dim=dim if dim is not None else 0, dtype=dtype)
    if out is not None:
        out.copy_(output)
        return out
    return output


def _draw(c, dist, shape, dtype):
    if dist == "uniform":
        t = c.uniform(*shape, low=-4.0, high=4.0)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape, std=2.0)
    return t.to(dtype)


def _make(shape, repeats, dim=None, in_dtype=torch.float32, dist="normal", with_out=False,
          give_size=False, **kwargs):
    """repeats: an int, ('tensor', low, high) for per-index counts, or ('one', r) for a
    1-element tensor."""
    def make(c):
        x = _draw(c, dist, shape, in_dtype)
        length = x.numel() if dim is None else x.shape[dim]
        if isinstance(repeats, int):
            r = repeats
            total = length * r
        elif repeats[0] == "one":
            r = torch.tensor([repeats[1]], device=c.device)
            total = length * repeats[1]
        else:
            r = c.randint(repeats[1], repeats[2], length)
            total = int(r.sum().item())
        kw = dict(kwargs)
        if dim is not None:
            kw_dim = {"dim": dim}
        else:
            kw_dim = {}
        if give_size:
            kw["output_size"] = total
        if with_out:
            out_shape = (total,) if dim is None else tuple(
                total if i == dim % x.dim() else s for i, s in enumerate(x.shape))
            out_dtype = kw.get("dtype") or in_dtype
            kw["out"] = torch.full(out_shape, -5.0, dtype=out_dtype, device=c.device)
        return (x, r), {**kw_dim, **kw}
    return make


def cases():
    f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
    return [
        Case("special_1d_f32", "edge", lambda c: ((c.finite_special(f32), 2), {})),
        Case("special_bf16_to_f32", "edge",
             lambda c: ((c.finite_special(bf16).reshape(3, 5), 3), {"dim": 1, "dtype": f32})),
        Case("zero_repeats_f32", "edge", _make((4, 6), 0, dim=1)),
        Case("some_zero_counts_f32", "edge", _make((5, 9), ("tensor", 0, 3), dim=1, give_size=True)),
        Case("flatten_2d_f32_out", "edge", _make((7, 5), 3, with_out=True)),
        Case("one_element_repeats_to_f64", "edge", _make((6, 4), ("one", 2), dim=0, dtype=f64)),
        Case("normal_f32_dim1", "small", _make((64, 300), 3, dim=1), dist="normal"),
        Case("normal_f32_counts_dim0", "small", _make((257, 33), ("tensor", 0, 4), dim=0),
             dist="normal"),
        Case("uniform_f32_3d_last_out", "small",
             _make((5, 7, 129), 2, dim=-1, dist="uniform", with_out=True), dist="uniform"),
        Case("uniform_f16", "small",
             _make((40, 250), ("tensor", 1, 5), dim=1, in_dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16_to_f32_out", "small",
             _make((33, 200), 4, dim=1, in_dtype=bf16, dist="outliers", with_out=True, dtype=f32),
             dist="outliers"),
        Case("outliers_f32_flat", "small", _make((3, 1111), 2, dist="outliers"), dist="outliers"),
        Case("perf_f32_rows_x2", "full", _make((4096, 8192), 2, dim=1), dist="normal"),
        Case("perf_bf16_counts_to_f32", "full",
             _make((8192, 4096), ("tensor", 0, 4), dim=1, in_dtype=bf16, dtype=f32), dist="normal"),
        Case("perf_f16_dim0_x4", "full", _make((8192, 2048), 4, dim=0, in_dtype=f16),
             dist="normal"),
        Case("perf_f32_flat_out", "full", _make((4096, 4096), 3, with_out=True, give_size=True),
             dist="normal"),
    ]


def cost(input, repeats, dim=None, *, output_size=None, dtype=None, out=None):
    length = input.numel() if dim is None else input.shape[dim]
    if isinstance(repeats, int):
        total = length * repeats
    elif repeats.numel() == 1:
        total = length * int(repeats.item())
    else:
        total = int(repeats.sum().item())
    n_out = input.numel() // max(1, length) * total
    out_size = torch.empty((), dtype=dtype).element_size() if dtype is not None else input.element_size()
    rep_bytes = repeats.numel() * repeats.element_size() if isinstance(repeats, torch.Tensor) else 0
    return {"flops": 3 * input.numel() + 2 * n_out,
            "bytes": input.numel() * input.element_size() + rep_bytes + n_out * out_size}
