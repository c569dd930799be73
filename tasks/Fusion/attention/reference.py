import torch

from kbx_worker.casegen import Case


def attention(q, k, v, causal: bool = False, softmax_scale=None, *, out=None):
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    acc = torch.promote_types(q.dtype, torch.float32)  # float32 for halves, float64 in the shadow
    scores = torch.matmul(q.to(acc), k.to(acc).transpose(-2, -1)) * softmax_scale
    if causal:
        s = q.shape[-2]
        mask = torch.triu(torch.ones(s, s, device=q.device, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
    result = torch.matmul(torch.softmax(scores, dim=-1), v.to(acc))
    if out is not None:
        out.copy_(result.to(out.dtype))
        return out
    return result.to(q.dtype)


def _qkv(draw, b, h, s, d, **kwargs):
    """make() for random q, k, v drawn by draw(c, shape)."""
    def make(c):
        shape = (b, h, s, d)
        return (draw(c, shape), draw(c, shape), draw(c, shape)), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32, r=2.0):
    return lambda c, shape: c.uniform(shape, low=-r, high=r, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, frac=0.01, scale=20.0)


def _with_out(b, h, s, d, dtype, **kwargs):
    def make(c):
        shape = (b, h, s, d)
        q, k, v = (c.randn(shape, dtype=dtype) for _ in range(3))
        out = torch.zeros(shape, dtype=dtype, device=c.device)
        return (q, k, v), dict(kwargs, out=out)
    return make


def _zero_q(causal):
    def make(c):
        q = torch.zeros(1, 2, 37, 64, device=c.device)
        return (q, c.randn(1, 2, 37, 64), c.randn(1, 2, 37, 64)), {"causal": causal}
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("empty_seq", "edge", _qkv(_normal(), 1, 2, 0, 64)),
        Case("one_token", "edge", _qkv(_normal(), 2, 3, 1, 64)),
        Case("one_token_causal", "edge", _qkv(_normal(), 2, 3, 1, 64, causal=True)),
        Case("zero_q_mean_of_v", "edge", _zero_q(False)),
        Case("zero_q_causal_prefix_mean", "edge", _zero_q(True)),
        Case("normal_f32", "small", _qkv(_normal(), 2, 3, 67, 64), dist="normal"),
        Case("normal_f32_causal_d128", "small", _qkv(_normal(), 1, 2, 100, 128, causal=True),
             dist="normal"),
        Case("normal_f16_causal", "small", _qkv(_normal(f16), 1, 4, 127, 64, causal=True),
             dist="normal"),
        Case("uniform_bf16_causal_d128", "small", _qkv(_uniform(bf16), 2, 2, 96, 128, causal=True),
             dist="uniform"),
        Case("uniform_f32_scale", "small", _qkv(_uniform(), 1, 3, 53, 32, softmax_scale=0.3),
             dist="uniform"),
        Case("outliers_f32", "small", _qkv(_outliers(), 1, 2, 100, 64), dist="outliers"),
        Case("outliers_bf16_causal", "small", _qkv(_outliers(bf16), 2, 1, 77, 64, causal=True),
             dist="outliers"),
        Case("out_f32", "small", _with_out(1, 2, 64, 64, f32, softmax_scale=0.125), dist="normal"),
        Case("out_bf16_causal", "small", _with_out(1, 2, 45, 128, bf16, causal=True),
             dist="normal"),
        Case("perf_f16_b4h16s4096d64", "full", _qkv(_normal(f16), 4, 16, 4096, 64),
             dist="normal"),
        Case("perf_bf16_b4h16s4096d128_causal", "full",
             _qkv(_normal(bf16), 4, 16, 4096, 128, causal=True), dist="normal"),
        Case("perf_bf16_b1h16s8192d128_causal", "full",
             _qkv(_normal(bf16), 1, 16, 8192, 128, causal=True), dist="normal"),
        Case("perf_f16_b8h16s2048d128", "full", _qkv(_normal(f16), 8, 16, 2048, 128),
             dist="normal"),
        Case("perf_f32_b2h8s2048d64_causal", "full", _qkv(_normal(), 2, 8, 2048, 64, causal=True),
             dist="normal"),
    ]


def cost(q, k, v, causal=False, softmax_scale=None, *, out=None):
    b, h, s, d = q.shape
    flops = 4 * b * h * s * s * d
    if causal:
        flops //= 2
    return {"flops": flops, "bytes": 4 * q.numel() * q.element_size()}
