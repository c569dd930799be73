import torch

from kbx_worker.casegen import Case


def _quantize(x, dim):
    """Symmetric int8 codes (as float) and float32 scales of float32 x, one scale per slice along `dim`.

    scale = absmax / 127 and q = clamp(round_half_even(x / scale), -127, 127), both divisions IEEE float32
    divisions by tensors (CUDA turns division by a Python number into multiplication by its reciprocal);
    an all-zero slice has scale 0 and codes 0."""
    amax = x.abs().amax(dim=dim, keepdim=True)
    scale = amax / torch.full_like(amax, 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(x / safe), -127, 127), scale


def _codes(input, mat2):
    qa, sa = _quantize(input.to(torch.float32), 2)  # (B, M, K), (B, M, 1)
    qb, sb = _quantize(mat2.to(torch.float32), 1)   # (B, K, N), (B, 1, N)
    # |partial sums| <= K * 127^2 < 2^53: the float64 product of the integer codes is exact
    acc = torch.bmm(qa.to(torch.float64), qb.to(torch.float64))
    return acc, sa, sb


def bmm_w8a8(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    acc, sa, sb = _codes(input, mat2)
    return ((acc.to(torch.float32) * sa) * sb).to(input.dtype)


def shadow(input, mat2):
    """Same scales and codes (the float64 inputs convert back to float32 exactly), dequantized in float64."""
    acc, sa, sb = _codes(input, mat2)
    return acc * sa.to(torch.float64) * sb.to(torch.float64)


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def _const(rows):
    return lambda c: torch.tensor(rows, dtype=torch.float32, device=c.device)


def _ties(c):
    """Rows of input / columns of mat2 whose absmax is 127 * 2^j, so that the scale is exactly 2^j and
    v / scale lands exactly on .5 ties (round half to even decides them)."""
    k = torch.arange(-8, 8, device=c.device, dtype=torch.float32) + 0.5               # -7.5 .. 7.5
    base = torch.cat([k, torch.tensor([127.0, -126.5, 2.5, -3.5], device=c.device)])  # K = 20
    a = torch.stack([base[c.randperm(20)] * 2.0 ** j for j in (-3, 0, 1, 5)])          # (4, 20)
    col = base.clone()
    col[16] = -127.0
    b = torch.stack([col[c.randperm(20)] * 2.0 ** j for j in (0, -2, 3)], dim=1)       # (20, 3)
    return (torch.stack([a, a.flip(0)]), torch.stack([b, -b])), {}


def _near_ties(c, rows, n, qmax=127):
    """(rows, n) float32 values sitting within an ulp or two of a rounding tie of the scheme: each row holds
    its absmax A (so the scale is s = A / qmax, an IEEE float32 division) and values (k + 0.5) * s rounded to
    float32. A scale or quotient that is off by one ulp (a reciprocal multiply, an approximate division)
    flips many of these codes."""
    amax = c.uniform(rows, 1, low=0.5, high=4.0)
    scale = amax / torch.full_like(amax, float(qmax))
    k = c.randint(-qmax, qmax, rows, n).to(torch.float64)
    x = ((k + 0.5) * scale.to(torch.float64)).to(torch.float32)
    sign = torch.where(c.bernoulli(rows, 1), 1.0, -1.0)
    return torch.cat([amax * sign, x[:, 1:]], dim=1)[:, c.randperm(n)]


def _near_ties_pair(c):
    a = torch.stack([_near_ties(c, 128, 96) for _ in range(2)])
    b = torch.stack([_near_ties(c, 128, 96).T for _ in range(2)])
    return (a, b), {}


def _zero_batch(c):
    a = c.randn(3, 4, 8)
    a[1] = 0.0
    return (a, c.randn(3, 8, 4)), {}


def _clamped_outliers(*shape, dtype=torch.float32):
    return lambda c: c.outliers(*shape, scale=10.0).clamp(-10, 10).to(dtype)


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("batch1", "edge", _pair(lambda c: c.randn(1, 8, 16), lambda c: c.randn(1, 16, 8))),
        Case("narrow_m1_n1", "edge", _pair(lambda c: c.randn(2, 1, 32), lambda c: c.randn(2, 32, 1))),
        Case("zero_batch", "edge", _zero_batch),
        Case("asymmetric_ranges", "edge",
             _pair(lambda c: c.randn(2, 8, 16, std=50.0), lambda c: c.randn(2, 16, 8, std=0.1))),
        Case("one_by_one", "edge", _pair(_const([[[127.0]], [[-3.0]]]), _const([[[-127.0]], [[0.5]]]))),
        Case("round_half_even_ties", "edge", _ties),
        Case("near_ties", "edge", _near_ties_pair),
        Case("empty_batch", "edge", _pair(lambda c: c.randn(0, 4, 8), lambda c: c.randn(0, 8, 5))),
        Case("normal_f32", "small", _pair(lambda c: c.randn(2, 32, 64), lambda c: c.randn(2, 64, 48)),
             dist="normal"),
        Case("normal_f32_odd", "small", _pair(lambda c: c.randn(3, 45, 127), lambda c: c.randn(3, 127, 37)),
             dist="normal"),
        Case("outliers_f32", "small", _pair(_clamped_outliers(2, 64, 96), _clamped_outliers(2, 96, 80)),
             dist="outliers"),
        Case("outliers_heavy_f32", "small",
             _pair(lambda c: c.outliers(4, 33, 65, frac=0.02), lambda c: c.randn(4, 65, 29)),
             dist="outliers"),
        Case("uniform_f16", "small", _pair(lambda c: c.uniform(2, 33, 96, low=-2, high=2, dtype=f16),
                                           lambda c: c.uniform(2, 96, 41, low=-1, high=1, dtype=f16)),
             dist="uniform"),
        Case("normal_bf16", "small", _pair(lambda c: c.randn(5, 20, 128, dtype=bf16),
                                           lambda c: c.randn(5, 128, 24, std=0.05, dtype=bf16)),
             dist="normal"),
        Case("perf_f32_16x1024x1024x1024", "full",
             _pair(lambda c: c.randn(16, 1024, 1024), lambda c: c.randn(16, 1024, 1024)), dist="normal"),
        Case("perf_bf16_8x2048x4096x2048", "full",
             _pair(lambda c: c.randn(8, 2048, 4096, dtype=bf16),
                   lambda c: c.randn(8, 4096, 2048, std=0.02, dtype=bf16)), dist="normal"),
        Case("perf_f16_64x512x128x512_attn_like", "full",
             _pair(lambda c: c.outliers(64, 512, 128, frac=0.001, scale=20.0, dtype=f16),
                   lambda c: c.randn(64, 128, 512, dtype=f16)), dist="outliers"),
        Case("perf_f32_4x4096x4096x4096", "full",
             _pair(lambda c: c.randn(4, 4096, 4096), lambda c: c.randn(4, 4096, 4096)), dist="normal"),
    ]


def cost(input, mat2):
    b, m, k = input.shape
    n = mat2.shape[2]
    es = input.element_size()
    return {"flops": 2 * b * m * n * k, "bytes": b * (m * k + k * n + m * n) * es}
