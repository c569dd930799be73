import math

import torch

from kbx_worker.casegen import Case

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

# Probability budget per test: every bound below is exceeded by a correct generator with
# probability of order 1e-9 or less, so a correct candidate fails a case with probability < 1e-8.
KS_ALPHA = 1e-9     # Dvoretzky-Kiefer-Wolfowitz (Massart): P(D_n > t) <= 2 exp(-2 n t^2)
Z = 6.5             # normal quantile for mean, variance and lag-1 correlation (two-sided ~8e-11)
KS_SAMPLE = 1 << 20  # the KS test uses an evenly strided subsample of at most this many values
CHUNK = 1 << 24


def rand(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
         requires_grad=False, pin_memory=False):
    return torch.rand(*size, generator=generator, out=out, dtype=dtype, layout=layout, device=device,
                      requires_grad=requires_grad, pin_memory=pin_memory)


# ---------------------------------------------------------------------------------------------
# Cases


def _case(size, as_tuple=False, dtype=None, with_out=False):
    def make(c):
        args = (tuple(size),) if as_tuple else tuple(size)
        kw = {}
        if with_out:
            kw["out"] = torch.full(size, -1.0, dtype=dtype or F32, device=c.device)
        else:
            kw["device"] = str(c.device)
            if dtype is not None:
                kw["dtype"] = dtype
        return args, kw
    return make


# Cases passing out= (e.g. _case((331, 197), with_out=True)) are left out for now: the supervisor
# compares an input updated by a random case with the reference's own draw, which no other
# generator can match. The reference and the judge handle them already.
def cases():
    return [
        Case("f32_2d", "small", _case((251, 257)), dist="uniform01_f32", random=True),
        Case("f32_tuple_size", "small", _case((61, 1009), as_tuple=True), dist="uniform01_f32", random=True),
        Case("f32_1d_prime", "small", _case((65521,)), dist="uniform01_f32", random=True),
        Case("f32_3d", "small", _case((7, 33, 129)), dist="uniform01_f32", random=True),
        Case("f64", "small", _case((129, 255), dtype=F64), dist="uniform01_f64", random=True),
        Case("f16", "small", _case((255, 255), dtype=F16), dist="uniform01_f16", random=True),
        Case("bf16", "small", _case((250, 260), dtype=BF16), dist="uniform01_bf16", random=True),
        Case("perf_f32_64M", "full", _case((8192, 8192)), dist="uniform01_f32", random=True),
        Case("perf_bf16_64M", "full", _case((8192, 8192), dtype=BF16), dist="uniform01_bf16", random=True),
        Case("perf_f16_odd", "full", _case((12289, 3001), dtype=F16), dist="uniform01_f16", random=True),
        Case("perf_f32_16M", "full", _case((4096, 4096)), dist="uniform01_f32", random=True),
    ]


def cost(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
         requires_grad=False, pin_memory=False):
    shape = _shape(size)
    n = math.prod(shape)
    es = torch.empty((), dtype=_expected_dtype({"out": out, "dtype": dtype})).element_size()
    return {"flops": 4 * n, "bytes": n * es}


# ---------------------------------------------------------------------------------------------
# Statistical contract


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _expected_dtype(kwargs):
    if kwargs.get("dtype") is not None:
        return kwargs["dtype"]
    if isinstance(kwargs.get("out"), torch.Tensor):
        return kwargs["out"].dtype
    return torch.get_default_dtype()


def _resolution(dtype):
    """2^-p for p significant bits: the coarsest spacing of representable values in [0.5, 1)."""
    return 2.0 ** -{F64: 53, F32: 24, F16: 11, BF16: 8}[dtype]


def _moments(flat):
    """One pass over the draw in float64 chunks: min, max, and sums of y = x - 0.5, of y^2 and of
    neighbouring products y[i] * y[i+1]."""
    lo, hi, s1, s2, lag, prev = math.inf, -math.inf, 0.0, 0.0, 0.0, None
    for start in range(0, flat.numel(), CHUNK):
        y = flat[start:start + CHUNK].to(F64) - 0.5
        lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
        s1 += float(y.sum())
        s2 += float((y * y).sum())
        lag += float((y[:-1] * y[1:]).sum())
        if prev is not None:
            lag += prev * float(y[0])
        prev = float(y[-1])
    return lo + 0.5, hi + 0.5, s1, s2, lag


def _stats(x):
    """Checks of one draw; returns (problem or None, stats)."""
    flat = x.detach().reshape(-1)  # on the device the judge read it to (a GPU: seconds saved)
    n = flat.numel()
    dt = x.dtype
    delta = 2 * _resolution(dt)  # allowance for rounding to the dtype's grid (either direction)
    lo, hi, s1, s2, lag = _moments(flat)
    stats = {"n": float(n), "min": lo, "max": hi}
    if not (lo >= 0.0 and hi < 1.0):  # also false for NaN
        return f"values outside [0, 1): min {lo}, max {hi}", stats
    mean = 0.5 + s1 / n
    var = (s2 - s1 * s1 / n) / (n - 1)
    stats.update(mean=mean, var=var)
    mean_tol = Z * math.sqrt(1 / 12 / n) + delta
    if abs(mean - 0.5) > mean_tol:
        return f"mean {mean:.6f} is not 0.5 within {mean_tol:.2e}", stats
    var_tol = Z * math.sqrt((1 / 80 - 1 / 144) / n) + delta
    if abs(var - 1 / 12) > var_tol:
        return f"variance {var:.6f} is not 1/12 within {var_tol:.2e}", stats
    lag1 = 12 * lag / (n - 1)
    stats["lag1_corr"] = lag1
    lag_tol = Z / math.sqrt(n - 1) + 12 * delta
    if abs(lag1) > lag_tol:
        return f"neighbouring values correlate: lag-1 correlation {lag1:.2e} (bound {lag_tol:.2e})", stats
    stride = max(1, -(-n // KS_SAMPLE))
    sample = torch.sort(flat[::stride].to(F64)).values
    k = sample.numel()
    ranks = torch.arange(1, k + 1, dtype=F64, device=sample.device)
    d = max(float((ranks / k - sample).max()), float((sample - (ranks - 1) / k).max()))
    ks_tol = math.sqrt(math.log(2 / KS_ALPHA) / (2 * k)) + delta
    stats["ks_d"] = d
    if d > ks_tol:
        return f"not uniform: Kolmogorov-Smirnov distance {d:.4f} > {ks_tol:.4f} over {k} values", stats
    levels = 1.0 / _resolution(dt)
    expected = levels * -math.expm1(-k / levels)
    distinct = torch.unique(sample).numel()
    stats["distinct_frac"] = distinct / expected
    if distinct < 0.9 * expected:
        return f"only {distinct} distinct values among {k} (about {expected:.0f} expected)", stats
    half = n // 2
    same_halves = int((flat[:half] == flat[half:2 * half]).sum())
    if same_halves > _equal_bound(half, dt):
        return f"the two halves of the output repeat each other ({same_halves} equal positions)", stats
    return None, stats


def _equal_bound(n, dtype):
    """Upper bound on how many of n position pairs of two independent draws may coincide."""
    q = 4 * _resolution(dtype)
    return n * q + 7 * math.sqrt(n * q) + 5


def judge(args, kwargs, out_a, out_b):
    shape = _shape(args)
    dtype = _expected_dtype(kwargs)
    stats = {}
    for label, x in (("first", out_a), ("second", out_b)):
        if not isinstance(x, torch.Tensor):
            return {"ok": False, "message": f"{label} draw is a {type(x).__name__}, not a tensor",
                    "stats": stats}
        if tuple(x.shape) != shape or x.dtype != dtype:
            return {"ok": False, "message": f"{label} draw has shape {tuple(x.shape)} and dtype {x.dtype}, "
                    f"expected {shape} and {dtype}", "stats": stats}
        if x.numel() == 0:
            continue
        problem, st = _stats(x)
        stats.update({f"{label}_{k}": v for k, v in st.items()})
        if problem:
            return {"ok": False, "message": f"{label} draw: {problem}", "stats": stats}
    n = out_a.numel()
    if n:
        same = int((out_a.reshape(-1) == out_b.reshape(-1).to(out_a.device)).sum())
        stats["equal_positions"] = float(same)
        if same > _equal_bound(n, dtype):
            return {"ok": False, "message": f"the two draws (different torch seeds) agree at {same} of {n} "
                    "positions: the output does not follow torch's random state", "stats": stats}
    return {"ok": True, "message": "uniform on [0, 1), seed-dependent", "stats": stats}
