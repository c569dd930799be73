import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case

GROUP = 128


def _quantize_w4(weight):
    """int4 codes (as float, shape (N, K)) and float32 scales (shape (N, G, 1)) of a float (N, K) weight,
    groups of GROUP consecutive elements along K (the last one shorter when K % GROUP != 0).

    scale = absmax / 7 and q = clamp(round_half_even(w / scale), -8, 7), both IEEE float32 divisions by
    tensors (CUDA turns division by a Python number into multiplication by its reciprocal); an all-zero group
    has scale 0 and codes 0. Zero padding of the last group does not change its absmax."""
    w = weight.to(torch.float32)
    n, k = w.shape
    groups = -(-k // GROUP)
    wp = F.pad(w, (0, groups * GROUP - k)).reshape(n, groups, GROUP)
    amax = wp.abs().amax(dim=-1, keepdim=True)
    scale = amax / torch.full_like(amax, 7.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = torch.clamp(torch.round(wp / safe), -8, 7)
    return q, scale, k


def _dequantized(weight, dt):
    q, scale, k = _quantize_w4(weight)
    wd = (q.to(dt) * scale.to(dt)).reshape(q.shape[0], -1)[:, :k]
    return wd


def linear_w4a16(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None) -> torch.Tensor:
    wd = _dequantized(weight, torch.float32).to(input.dtype)
    if input.device.type == "cpu":
        # Half-precision CPU GEMMs are missing or slow in older releases: same values, float32 accumulation.
        b = None if bias is None else bias.float()
        return F.linear(input.float(), wd.float(), b).to(input.dtype)
    return F.linear(input, wd, bias)


def shadow(input, weight, bias=None):
    """Same group scales and codes (the float64 weight converts back to float32 exactly); q * s and the
    product in float64."""
    return F.linear(input, _dequantized(weight, torch.float64), bias)


def _lin(x_shape, n, bias=False, draw="randn", dtype=torch.float16, w_draw="randn"):
    def make(c):
        k = x_shape[-1]
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-2, high=2)
        elif draw == "outliers":
            x = c.outliers(*x_shape, frac=0.01, scale=10.0).clamp(-10, 10)
        else:
            x = c.randn(*x_shape)
        if w_draw == "outliers":
            w = c.outliers(n, k, frac=0.01, scale=10.0).clamp(-10, 10) * k ** -0.5
        else:
            w = c.randn(n, k, std=k ** -0.5)
        args = [x.to(dtype), w.to(dtype)]
        if bias:
            args.append(c.randn(n, std=0.5).to(dtype))
        return tuple(args), {}
    return make


def _fixed(x, w, b=None):
    def make(c):
        t = lambda v: torch.tensor(v, dtype=torch.float16, device=c.device)
        return (t(x), t(w)) + ((t(b),) if b is not None else ()), {}
    return make


def _ties(c):
    """Groups with absmax 7 * 2^j (scale exactly 2^j) and entries on .5 ties of the int4 grid, including
    groups split across the K boundary (K = 200: groups of 128 and 72)."""
    k = 200
    grid = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 4.5, -4.5, 5.5, -5.5, 6.5, -6.5, 7.0, -7.0,
                         0.0, 1.0, -3.0, 6.0], device=c.device)
    rows = []
    for i in range(8):
        r = grid[c.randint(0, 20, k)]
        r[3] = 7.0 if i % 2 else -7.0      # absmax of the first group
        r[150] = -7.0                      # absmax of the second group
        rows.append(r * 2.0 ** (-(i % 4) - 2))
    w = torch.stack(rows).to(torch.float16)
    return (c.randn(5, k).to(torch.float16), w), {}


def _odd_scale_ties(c):
    """Exact .5 ties under scales that are not powers of two: each group's absmax is 7 * m * 2^e with m odd
    (3 .. 15), so s = m * 2^e is exact but 1/s is not, and the other values are (k + 0.5) * s, all exactly
    representable in float16 and bfloat16. The IEEE quotient is exactly k + 0.5 and round half to even decides
    it; a reciprocal multiply or an approximate division lands an ulp off the tie and rounds the other way
    about half of the time."""
    n, groups = 96, 2
    m = torch.tensor([3.0, 5.0, 9.0, 11.0, 13.0, 15.0], device=c.device)[c.randint(0, 6, n, groups, 1)]
    s = m * 2.0 ** c.randint(-8, -3, n, groups, 1).to(torch.float32)
    k = c.randint(-7, 7, n, groups, GROUP).to(torch.float32)
    w = (k + 0.5) * s
    w[..., :1] = 7.0 * s * torch.where(c.bernoulli(n, groups, 1), 1.0, -1.0)
    w = w[..., c.randperm(GROUP)].reshape(n, groups * GROUP)
    return (c.randn(17, groups * GROUP).to(torch.bfloat16), w.to(torch.bfloat16)), {}


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("int4_boundary", "edge", _fixed([[1.0, 1.0, 1.0, 1.0]], [[7.0, -8.0, 3.5, -3.5]])),
        Case("extreme_scale", "edge", _fixed([[1.0, 1.0, 1.0, 1.0]],
                                             [[100.0, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.1]])),
        Case("zero_row", "edge", lambda c: ((c.randn(2, 4).to(f16),
                                             torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0],
                                                           [5.0, 6.0, 7.0, 8.0]], dtype=f16, device=c.device)),
                                            {})),
        Case("single_output_bias", "edge", _fixed([[2.0, 2.0, 2.0, 2.0]], [[0.5, -0.5, 1.0, -1.0]], [10.0])),
        Case("round_half_even_ties", "edge", _ties),
        Case("odd_scale_ties", "edge", _odd_scale_ties),
        Case("empty_batch", "edge", _lin((0, 256), 64)),
        Case("normal_f16", "small", _lin((16, 256), 128), dist="normal"),
        Case("normal_f16_small", "small", _lin((8, 128), 64, bias=True), dist="normal"),
        Case("normal_f16_odd_k", "small", _lin((33, 300), 97, bias=True), dist="normal"),
        Case("outliers_f16", "small", _lin((16, 256), 128, draw="outliers", w_draw="outliers"),
             dist="outliers"),
        Case("uniform_bf16_3d", "small", _lin((3, 11, 384), 80, draw="uniform", dtype=bf16), dist="uniform"),
        Case("outliers_bf16_weights", "small", _lin((24, 512), 64, bias=True, dtype=bf16, w_draw="outliers"),
             dist="outliers"),
        Case("perf_f16_decode_16x4096x4096", "full", _lin((16, 4096), 4096), dist="normal"),
        Case("perf_f16_prefill_4096x4096x4096", "full", _lin((4096, 4096), 4096, bias=True), dist="normal"),
        Case("perf_bf16_mlp_up_256x4096x14336", "full", _lin((256, 4096), 14336, dtype=bf16), dist="normal"),
        Case("perf_f16_gemv_1x8192x8192", "full", _lin((1, 8192), 8192, w_draw="outliers"), dist="outliers"),
    ]


def cost(input, weight, bias=None):
    n, k = weight.shape
    m = input.numel() // max(k, 1)
    es = input.element_size()
    # the float weight has to be read once (it is quantized in the call)
    moved = input.numel() + weight.numel() + (0 if bias is None else bias.numel()) + m * n
    return {"flops": 2 * m * n * k, "bytes": moved * es}
