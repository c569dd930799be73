import torch

from kbx_worker.casegen import Case


def _quantize(x):
    """Per-row (last dimension) symmetric int8 codes (as float) and float32 scales of float32 x.

    scale = absmax / 127 and q = clamp(round_half_even(x / scale), -127, 127), both divisions IEEE float32
    divisions by tensors (CUDA turns division by a Python number into multiplication by its reciprocal);
    an all-zero row has scale 0 and codes 0."""
    amax = x.abs().amax(dim=-1, keepdim=True)
    scale = amax / torch.full_like(amax, 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(x / safe), -127, 127), scale


def _attention(query, key, value, dt):
    qq, sq = _quantize(query.to(torch.float32))
    qk, sk = _quantize(key.to(torch.float32))
    qv, sv = _quantize(value.to(torch.float32))
    # |q . k| <= 127^2 * D < 2^24 for D <= 1040: a float32 (or float64) product of the codes is exact
    acc = torch.matmul(qq.to(dt), qk.to(dt).transpose(-2, -1))
    scores = acc * sq.to(dt) * sk.to(dt).transpose(-2, -1) * (query.size(-1) ** -0.5)
    p = torch.softmax(scores, dim=-1)
    return torch.matmul(p, qv.to(dt) * sv.to(dt))


def attention_w8a8(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return _attention(query, key, value, torch.float32).to(query.dtype)


def shadow(query, key, value):
    """Same scales and codes (the float64 inputs convert back to float32 exactly); the rest in float64."""
    return _attention(query, key, value, torch.float64)


def _qkv(q_shape, k_shape, v_shape, draw="randn", dtype=torch.float32, clamp=None):
    def make(c):
        out = []
        for shape in (q_shape, k_shape, v_shape):
            if draw == "uniform":
                t = c.uniform(*shape, low=-2, high=2)
            elif draw == "outliers":
                t = c.outliers(*shape, frac=0.01, scale=10.0)
            else:
                t = c.randn(*shape)
            if clamp is not None:
                t = t.clamp(-clamp, clamp)
            out.append(t.to(dtype))
        return tuple(out), {}
    return make


def _self(b, s, d, **kwargs):
    return _qkv((b, s, d), (b, s, d), (b, s, d), **kwargs)


def _extreme(c):
    q = torch.tensor([[[10.0, 0.0], [0.0, 10.0]]], device=c.device)
    return (q, q.clone(), c.randn(1, 2, 2)), {}


def _zero_qk(c):
    return (torch.zeros(1, 3, 4, device=c.device), torch.zeros(1, 3, 4, device=c.device), c.randn(1, 3, 4)), {}


def _ties(c):
    """Rows with absmax 127 * 2^j (scale exactly 2^j) and entries on .5 ties of the code grid."""
    k = torch.arange(-8, 8, device=c.device, dtype=torch.float32) + 0.5
    base = torch.cat([k, torch.tensor([127.0, -126.5, 2.5, -3.5, 0.0, 1.0, -0.5, 6.5, 9.5, -10.5,
                                       11.5, 12.5, -13.5, 14.5, 15.5, 16.5], device=c.device)])  # D = 32
    rows = lambda n, j: torch.stack([base[c.randperm(32)] * 2.0 ** (j - i % 3) for i in range(n)])
    return (rows(6, -7).unsqueeze(0), rows(9, -6).unsqueeze(0), rows(9, 0).unsqueeze(0)), {}


def _near_ties(c, rows, n):
    """Rows holding their absmax A and values (k + 0.5) * (A / 127) rounded to float32: within an ulp or two
    of a code tie, so a scale or quotient off by one ulp flips codes."""
    amax = c.uniform(rows, 1, low=0.5, high=4.0)
    scale = amax / torch.full_like(amax, 127.0)
    k = c.randint(-127, 127, rows, n).to(torch.float64)
    x = ((k + 0.5) * scale.to(torch.float64)).to(torch.float32)
    sign = torch.where(c.bernoulli(rows, 1), 1.0, -1.0)
    return torch.cat([amax * sign, x[:, 1:]], dim=1)[:, c.randperm(n)]


def _near_ties_qkv(c):
    b, s, d = 4, 64, 64
    t = [_near_ties(c, b * s, d).reshape(b, s, d) for _ in range(3)]
    return (t[0] * 0.25, t[1] * 0.25, t[2]), {}


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("single_token", "edge", _self(1, 1, 8)),
        Case("extreme_one_hot", "edge", _extreme),
        Case("zero_query_key", "edge", _zero_qk),
        Case("round_half_even_ties", "edge", _ties),
        Case("near_ties", "edge", _near_ties_qkv),
        Case("cross_attention_sq_ne_sk", "edge", _qkv((2, 5, 16), (2, 11, 16), (2, 11, 24))),
        Case("normal_f32", "small", _self(2, 64, 32), dist="normal"),
        Case("normal_f32_small", "small", _self(1, 32, 16), dist="normal"),
        Case("outliers_f32", "small", _self(2, 64, 32, draw="outliers", clamp=10.0), dist="outliers"),
        Case("outliers_f32_odd", "small", _qkv((3, 37, 48), (3, 53, 48), (3, 53, 40), draw="outliers"),
             dist="outliers"),
        Case("uniform_f32_4d", "small", _qkv((2, 3, 29, 64), (2, 3, 41, 64), (2, 3, 41, 64), draw="uniform"),
             dist="uniform"),
        Case("normal_f16", "small", _self(2, 96, 64, dtype=f16), dist="normal"),
        Case("normal_bf16_d128", "small", _self(1, 100, 128, dtype=bf16), dist="normal"),
        Case("perf_f32_64x1024x64", "full", _self(64, 1024, 64), dist="normal"),
        Case("perf_bf16_32x2048x128", "full", _self(32, 2048, 128, dtype=bf16), dist="normal"),
        Case("perf_f16_4d_4x16x2048x64", "full",
             _qkv((4, 16, 2048, 64), (4, 16, 2048, 64), (4, 16, 2048, 64), draw="outliers", dtype=f16),
             dist="outliers"),
        Case("perf_f32_16x4096x64", "full", _self(16, 4096, 64, draw="uniform"), dist="uniform"),
    ]


def cost(query, key, value):
    sq, d = query.shape[-2:]
    sk, dv = value.shape[-2:]
    batch = query.numel() // max(sq * d, 1)
    es = query.element_size()
    flops = 2 * batch * sq * sk * (d + dv) + 5 * batch * sq * sk
    moved = query.numel() + key.numel() + value.numel() + batch * sq * dv
    return {"flops": flops, "bytes": moved * es}
