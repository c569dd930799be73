import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_embedding_add_tanh(input_indices, weight, other, *, padding_idx=None, max_norm=None,
                             norm_type=2.0, scale_grad_by_freq=False, sparse=False, out=None):
    emb = F.embedding(input_indices, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                      sparse)
    result = torch.tanh(emb + other)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _make(draw, idx_shape, vocab, dim, other_shape=None, idx_dtype=torch.int64, with_out=False,
          weight_std=1.0, **kwargs):
    def make(c):
        idx = c.randint(0, vocab, idx_shape, dtype=idx_dtype)
        w = draw(c, (vocab, dim))
        w = (w.float() * weight_std).to(w.dtype)
        other = draw(c, other_shape or tuple(idx_shape) + (dim,))
        kw = dict(kwargs)
        if with_out:
            kw["out"] = torch.zeros(tuple(idx_shape) + (dim,), dtype=w.dtype, device=c.device)
        return (idx, w, other), kw
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.5, high=1.5, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _special(c):
    other = c.special(torch.float32)[:, None]          # (18, 1): inf, -inf, nan, extremes ...
    idx = c.randint(0, 5, other.shape[0])
    return (idx, c.randn(5, 1), other), {}


def _max_norm_duplicates(c):
    idx = torch.tensor([[1, 1, 4], [2, 1, 0]], device=c.device)
    w = c.randn(6, 8) * 2.0     # most rows above max_norm; rows 3 and 5 are not referenced
    return (idx, w, c.randn(2, 3, 8)), {"max_norm": 1.0}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    return [
        Case("special_other", "edge", _special),
        Case("max_norm_duplicates", "edge", _max_norm_duplicates),
        Case("empty_indices", "edge", _make(n, (0,), 7, 4)),
        Case("scalar_index", "edge", _make(n, (), 7, 5)),
        Case("padding_idx_no_effect", "edge", _make(n, (3, 4), 5, 6, padding_idx=0)),
        Case("normal_f32", "small", _make(n, (4, 16), 128, 64), dist="normal"),
        Case("normal_f32_int32_negative_pad", "small",
             _make(n, (7, 33), 100, 48, idx_dtype=torch.int32, padding_idx=-1), dist="normal"),
        Case("normal_bf16_bcast_out", "small",
             _make(_normal(bf16), (5, 31), 257, 96, other_shape=(96,), with_out=True),
             dist="normal"),
        Case("uniform_f16_max_norm_l1", "small",
             _make(_uniform(f16), (6, 40), 64, 32, max_norm=4.0, norm_type=1.0), dist="uniform"),
        Case("uniform_f32_max_norm", "small",
             _make(_uniform(), (300,), 90, 65, weight_std=2.0, max_norm=3.0), dist="uniform"),
        Case("outliers_f32", "small", _make(_outliers(), (8, 50), 1000, 40), dist="outliers"),
        Case("outliers_bf16_grad_flags", "small",
             _make(_outliers(bf16), (3, 3, 41), 77, 64, scale_grad_by_freq=True, sparse=True),
             dist="outliers"),
        Case("out_f32", "small", _make(n, (9, 21), 50, 30, with_out=True), dist="normal"),
        Case("perf_f32_gpt2", "full", _make(n, (32, 2048), 50257, 1024), dist="normal"),
        Case("perf_bf16_llama", "full", _make(_normal(bf16), (8, 4096), 32000, 4096),
             dist="normal"),
        Case("perf_f32_flat_out", "full",
             _make(_uniform(), (65536,), 30522, 768, with_out=True), dist="uniform"),
        Case("perf_f16_bcast", "full",
             _make(_normal(f16), (64, 1024), 50000, 2048, other_shape=(2048,), padding_idx=0),
             dist="normal"),
    ]


def cost(input_indices, weight, other, *, padding_idx=None, max_norm=None, norm_type=2.0,
         scale_grad_by_freq=False, sparse=False, out=None):
    d = weight.shape[-1]
    n = input_indices.numel() * d
    size = weight.element_size()
    return {"flops": 20 * n,
            "bytes": input_indices.numel() * input_indices.element_size()
            + (2 * n + other.numel()) * size}
