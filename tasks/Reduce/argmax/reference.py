import torch

from kbx_worker.casegen import Case


def argmax(input_tensor, dim, keepdim=False):
    return torch.argmax(input_tensor, dim=dim, keepdim=keepdim)


def _one(make_input, dim, **kwargs):
    return lambda c: ((make_input(c), dim), kwargs)


def _special_pairs(dtype):
    """(n, n, 2): the last dimension holds every ordered pair of special values (NaN, +-inf, +-0, ...).

    bfloat16 subnormals are left out: the Triton CPU interpreter converts them to float32 wrongly, which
    would fail a correct kernel on the CPU (float32 and float16 subnormals stay in)."""
    def make(c):
        s = c.special(dtype)
        if dtype == torch.bfloat16:
            s = s[(s == 0) | ~(s.abs() < torch.finfo(dtype).tiny)]
        n = s.numel()
        return torch.stack([s[:, None].expand(n, n), s[None, :].expand(n, n)], dim=-1).contiguous()
    return make


def _ties(*shape, levels=4, dtype=torch.float32):
    """Few distinct values, so that the maximum of a slice usually occurs several times."""
    return lambda c: c.randint(-levels, levels, *shape).to(dtype)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("special_pairs_f32", "edge", _one(_special_pairs(f32), -1)),
        Case("special_pairs_bf16_dim1", "edge",
             _one(lambda c: _special_pairs(bf16)(c).transpose(1, 2).contiguous(), 1, keepdim=True)),
        Case("special_vector_f16", "edge", _one(lambda c: c.special(f16, nan=False), 0)),
        Case("all_neg_inf_f32", "edge", _one(lambda c: torch.full((3, 7), float("-inf"), device=c.device), 1)),
        Case("ties_f32", "edge", _one(_ties(64, 33), 1)),
        Case("ties_f32_dim0", "edge", _one(_ties(129, 31), 0, keepdim=True)),
        Case("flat_none_f32", "edge", _one(lambda c: c.randn(17, 23), None)),
        Case("empty_rows_f32", "edge", _one(lambda c: c.randn(0, 5), 1)),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37), 1), dist="normal"),
        Case("normal_f32_dim0", "small", _one(lambda c: c.randn(129, 257), 0), dist="normal"),
        Case("uniform_f16_middle", "small",
             _one(lambda c: c.uniform(3, 517, 21, low=-1, high=1, dtype=f16), 1, keepdim=True), dist="uniform"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=bf16), -1), dist="outliers"),
        Case("ties_f16_long", "small", _one(_ties(5, 12007, levels=50, dtype=f16), -1), dist="ties"),
        Case("ties_bf16_dim0", "small", _one(_ties(1531, 41, levels=20, dtype=bf16), 0), dist="ties"),
        Case("logits_bf16", "small", _one(lambda c: c.randn(64, 1000, std=4.0, dtype=bf16), -1), dist="logits"),
        Case("perf_bf16_vocab", "full", _one(lambda c: c.randn(8192, 32000, std=4.0, dtype=bf16), -1),
             dist="logits"),
        Case("perf_f32_dim0", "full", _one(lambda c: c.randn(8192, 8192), 0), dist="normal"),
        Case("perf_f16_rows", "full", _one(lambda c: c.randn(32768, 4096, dtype=f16), 1), dist="normal"),
    ]


def cost(input_tensor, dim, keepdim=False):
    n = input_tensor.numel()
    rows = n // input_tensor.shape[dim] if dim is not None else 1
    return {"flops": n, "bytes": n * input_tensor.element_size() + 8 * rows}
