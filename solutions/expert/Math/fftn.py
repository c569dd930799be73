import torch
import triton
import triton.language as tl

_BLOCK = 1024
_MAX_RADIX = 8

# N-dimensional DFT as a sequence of 1-D transforms, one dimension at a time. Each 1-D transform of
# length L = R1 R2 ... Rm (prime factors packed into radices <= 8, which keeps the R iterations per
# output low; a larger prime factor up to 64 is a radix of its own) runs as m out-of-place Stockham
# stages: with Ns the product of the radices already done,
# S = Ns R, for the output position m = a S + q Ns + k (k < Ns, q < R) and j = a Ns + k,
#     out[m] = sum_{r<R} in[j + r L/R] * W_S^(r (k + q Ns)),     W_S = exp(-2 pi i / S),
# which leaves the result in natural order after the last stage. Every stage is one kernel: each
# output element loops over the R inputs it depends on, with the products accumulated in float64
# and twiddles read from a float64 table exp(-2 pi i t / L) (computed by a small kernel), so each
# stage adds a single float32 rounding: the error stays near PyTorch's own, for any length (odd,
# prime, mixed radix). The first stage of a dimension reads the source with its original length
# (zero padding or cropping for s) and, for the very first stage, as real data where the input is
# float32; the last stage applies the norm scale. A 0-d input (or only length-1 transforms) still
# goes through one copy stage, which converts it to complex.
# A length with a prime factor above 64 (97, 101, 3001, 8191, ...) would make a stage cost R per
# output; such a dimension uses Bluestein's algorithm instead: with c_n = exp(-pi i n^2 / N) (n^2 taken
# mod 2N exactly), X_k = c_k sum_n (x_n c_n) conj(c_(k-n)), a circular convolution of length
# M = 2^p >= 2N - 1 done as FFT_M(a) * FFT_M(b), an inverse FFT_M through conjugation, and a final
# chirp; the three length-M transforms are the Stockham stages above.


# Integer arguments that are converted to float64 inside a kernel are kept out of Triton's
# specialization (a value of 1 would otherwise arrive as a constexpr).
@triton.jit(do_not_specialize=["L"])
def _twiddle_kernel(tw_ptr, L, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = t < L
    ang = t.to(tl.float64) * (6.283185307179586 / L.to(tl.float64))
    tl.store(tw_ptr + 2 * t, tl.cos(ang), mask=mask)
    tl.store(tw_ptr + 2 * t + 1, -tl.sin(ang), mask=mask)


@triton.jit(do_not_specialize=["N"])
def _chirp_kernel(c_ptr, N, BLOCK: tl.constexpr):
    # c_n = exp(-pi i n^2 / N), with n^2 reduced mod 2N in integers
    t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = t < N
    e = (t * t) % (2 * N)
    ang = e.to(tl.float64) * (3.141592653589793 / N.to(tl.float64))
    tl.store(c_ptr + 2 * t, tl.cos(ang), mask=mask)
    tl.store(c_ptr + 2 * t + 1, -tl.sin(ang), mask=mask)


@triton.jit
def _bs_b_kernel(b_ptr, c_ptr, N, M, BLOCK: tl.constexpr):
    # b_m = conj(c_|m|) for the circular index m in (-N, N), zero elsewhere (length M)
    t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = t < M
    idx = tl.where(t < N, t, M - t)
    valid = mask & ((t < N) | (t > M - N))
    cr = tl.load(c_ptr + 2 * idx, mask=valid, other=0.0)
    ci = tl.load(c_ptr + 2 * idx + 1, mask=valid, other=0.0)
    tl.store(b_ptr + 2 * t, cr.to(tl.float32), mask=mask)
    tl.store(b_ptr + 2 * t + 1, (-ci).to(tl.float32), mask=mask)


@triton.jit
def _bs_pre_kernel(src_ptr, dst_ptr, c_ptr, total, L_in, N, M, inner,
                   IS_REAL: tl.constexpr, BLOCK: tl.constexpr):
    # dst[o, m, i] = x[o, m, i] c_m for m < min(N, L_in), else 0; dst is [outer, M, inner]
    f = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = f < total
    i = f % inner
    t = f // inner
    m = t % M
    o = t // M
    valid = mask & (m < N) & (m < L_in)
    off = (o * L_in + m) * inner + i
    if IS_REAL:
        xr = tl.load(src_ptr + off, mask=valid, other=0.0).to(tl.float64)
        xi = tl.zeros([BLOCK], tl.float64)
    else:
        xr = tl.load(src_ptr + 2 * off, mask=valid, other=0.0).to(tl.float64)
        xi = tl.load(src_ptr + 2 * off + 1, mask=valid, other=0.0).to(tl.float64)
    cr = tl.load(c_ptr + 2 * m, mask=valid, other=0.0)
    ci = tl.load(c_ptr + 2 * m + 1, mask=valid, other=0.0)
    tl.store(dst_ptr + 2 * f, (xr * cr - xi * ci).to(tl.float32), mask=mask)
    tl.store(dst_ptr + 2 * f + 1, (xr * ci + xi * cr).to(tl.float32), mask=mask)


@triton.jit
def _bs_mid_kernel(u_ptr, bh_ptr, total, M, inner, BLOCK: tl.constexpr):
    # u <- conj(u * B[m]) in place (the inverse transform is a forward one between conjugations)
    f = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = f < total
    m = (f // inner) % M
    ur = tl.load(u_ptr + 2 * f, mask=mask, other=0.0).to(tl.float64)
    ui = tl.load(u_ptr + 2 * f + 1, mask=mask, other=0.0).to(tl.float64)
    br = tl.load(bh_ptr + 2 * m, mask=mask, other=0.0).to(tl.float64)
    bi = tl.load(bh_ptr + 2 * m + 1, mask=mask, other=0.0).to(tl.float64)
    tl.store(u_ptr + 2 * f, (ur * br - ui * bi).to(tl.float32), mask=mask)
    tl.store(u_ptr + 2 * f + 1, (-(ur * bi + ui * br)).to(tl.float32), mask=mask)


@triton.jit(do_not_specialize=["M", "l_total"])
def _bs_post_kernel(w_ptr, dst_ptr, c_ptr, total, N, M, inner, l_total,
                    NORM: tl.constexpr, BLOCK: tl.constexpr):
    # X[o, k, i] = c_k conj(W[o, k, i]) / M (times the norm scale), k < N
    f = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = f < total
    i = f % inner
    t = f // inner
    k = t % N
    o = t // N
    off = (o * M + k) * inner + i
    wr = tl.load(w_ptr + 2 * off, mask=mask, other=0.0).to(tl.float64)
    wi = -tl.load(w_ptr + 2 * off + 1, mask=mask, other=0.0).to(tl.float64)
    cr = tl.load(c_ptr + 2 * k, mask=mask, other=0.0)
    ci = tl.load(c_ptr + 2 * k + 1, mask=mask, other=0.0)
    sc = 1.0 / M.to(tl.float64)
    if NORM == 1:
        sc = sc / tl.sqrt(l_total.to(tl.float64))
    if NORM == 2:
        sc = sc / l_total.to(tl.float64)
    tl.store(dst_ptr + 2 * f, ((wr * cr - wi * ci) * sc).to(tl.float32), mask=mask)
    tl.store(dst_ptr + 2 * f + 1, ((wr * ci + wi * cr) * sc).to(tl.float32), mask=mask)


@triton.jit(do_not_specialize=["l_total"])
def _fft_stage_kernel(src_ptr, dst_ptr, tw_ptr, total, L_in, L, inner, R, Ns, S, tw_step, l_total,
                      IS_REAL: tl.constexpr, NORM: tl.constexpr, BLOCK: tl.constexpr):
    f = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = f < total
    i = f % inner
    t = f // inner
    m = t % L
    o = t // L
    a = m // S
    rem = m % S
    q = rem // Ns
    k = rem % Ns
    j = a * Ns + k
    step = k + q * Ns  # < S
    lp = L // R
    base = o * L_in * inner + i
    acc_re = tl.zeros([BLOCK], tl.float64)
    acc_im = tl.zeros([BLOCK], tl.float64)
    e = tl.zeros([BLOCK], tl.int64)
    for r in range(R):
        n = j + r * lp
        valid = mask & (n < L_in)
        off = base + n * inner
        if IS_REAL:
            xr = tl.load(src_ptr + off, mask=valid, other=0.0).to(tl.float64)
            xi = tl.zeros([BLOCK], tl.float64)
        else:
            xr = tl.load(src_ptr + 2 * off, mask=valid, other=0.0).to(tl.float64)
            xi = tl.load(src_ptr + 2 * off + 1, mask=valid, other=0.0).to(tl.float64)
        ti = e * tw_step
        wr = tl.load(tw_ptr + 2 * ti, mask=mask, other=1.0)
        wi = tl.load(tw_ptr + 2 * ti + 1, mask=mask, other=0.0)
        acc_re += xr * wr - xi * wi
        acc_im += xr * wi + xi * wr
        e = e + step
        e = tl.where(e >= S, e - S, e)
    if NORM == 1:  # ortho
        sc = 1.0 / tl.sqrt(l_total.to(tl.float64))
        acc_re = acc_re * sc
        acc_im = acc_im * sc
    if NORM == 2:  # forward
        sc = 1.0 / l_total.to(tl.float64)
        acc_re = acc_re * sc
        acc_im = acc_im * sc
    tl.store(dst_ptr + 2 * f, acc_re.to(tl.float32), mask=mask)
    tl.store(dst_ptr + 2 * f + 1, acc_im.to(tl.float32), mask=mask)


def _factor(n):
    primes = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    if n > 1:
        primes.append(n)
    return primes


def _radices(n):
    """Prime factors of n packed greedily (largest first) into radices <= _MAX_RADIX."""
    bins = []
    for p in sorted(_factor(n), reverse=True):
        for b in range(len(bins)):
            if bins[b] * p <= _MAX_RADIX:
                bins[b] *= p
                break
        else:
            bins.append(p)
    return bins or [1]


class _Plan:
    def __init__(self, device):
        self.device = device
        self.tables = {}

    def twiddles(self, n):
        if n not in self.tables:
            tw = torch.empty(2 * n, dtype=torch.float64, device=self.device)
            _twiddle_kernel[(triton.cdiv(n, _BLOCK),)](tw, n, BLOCK=_BLOCK)
            self.tables[n] = tw
        return self.tables[n]

    def stockham(self, src, is_real, outer, l_in, n, inner, dst, norm_mode, l_total):
        """Length-n DFT of src [outer, l_in, inner] (cropped / zero-padded to n) into dst [outer, n, inner]."""
        tw = self.twiddles(n)
        rad = _radices(n)
        total = outer * n * inner
        cur, ns = src, 1
        for idx, r in enumerate(rad):
            last = idx == len(rad) - 1
            nxt = dst if last else torch.empty(2 * total, dtype=torch.float32, device=self.device)
            sz = ns * r
            _fft_stage_kernel[(triton.cdiv(total, _BLOCK),)](
                cur, nxt, tw, total, l_in if idx == 0 else n, n, inner, r, ns, sz, n // sz, l_total,
                IS_REAL=is_real and idx == 0, NORM=norm_mode if last else 0, BLOCK=_BLOCK, num_warps=4)
            cur, ns = nxt, sz
        return dst

    def bluestein(self, src, is_real, outer, l_in, n, inner, dst, norm_mode, l_total):
        m = triton.next_power_of_2(2 * n - 1)
        c = torch.empty(2 * n, dtype=torch.float64, device=self.device)
        _chirp_kernel[(triton.cdiv(n, _BLOCK),)](c, n, BLOCK=_BLOCK)
        b = torch.empty(2 * m, dtype=torch.float32, device=self.device)
        _bs_b_kernel[(triton.cdiv(m, _BLOCK),)](b, c, n, m, BLOCK=_BLOCK)
        bh = torch.empty(2 * m, dtype=torch.float32, device=self.device)
        self.stockham(b, False, 1, m, m, 1, bh, 0, 1)
        total = outer * m * inner
        u = torch.empty(2 * total, dtype=torch.float32, device=self.device)
        _bs_pre_kernel[(triton.cdiv(total, _BLOCK),)](src, u, c, total, l_in, n, m, inner,
                                                      IS_REAL=is_real, BLOCK=_BLOCK)
        uh = torch.empty(2 * total, dtype=torch.float32, device=self.device)
        self.stockham(u, False, outer, m, m, inner, uh, 0, 1)
        _bs_mid_kernel[(triton.cdiv(total, _BLOCK),)](uh, bh, total, m, inner, BLOCK=_BLOCK)
        self.stockham(uh, False, outer, m, m, inner, u, 0, 1)
        t_out = outer * n * inner
        _bs_post_kernel[(triton.cdiv(t_out, _BLOCK),)](u, dst, c, t_out, n, m, inner, l_total,
                                                       NORM=norm_mode, BLOCK=_BLOCK)
        return dst


def fftn(input, s=None, dim=None, norm=None, out=None):
    x = input
    nd = x.dim()
    if dim is None:
        dims = list(range(nd)) if s is None else list(range(nd - len(s), nd))
    else:
        dims = [d % nd for d in ((dim,) if isinstance(dim, int) else dim)] if nd else []
    lengths = list(s) if s is not None else [x.shape[d] for d in dims]
    lengths = [x.shape[d] if n == -1 else n for d, n in zip(dims, lengths)]
    out_shape = list(x.shape)
    for d, n in zip(dims, lengths):
        out_shape[d] = n
    norm_mode = {None: 0, "backward": 0, "ortho": 1, "forward": 2}[norm]
    l_total = 1
    for n in lengths:
        l_total *= n

    res = out if (out is not None and out.is_contiguous() and list(out.shape) == out_shape) else \
        torch.empty(out_shape, dtype=torch.complex64, device=x.device)
    if res.numel() and x.numel():
        is_real = not x.is_complex()
        src = x if x.is_contiguous() else x.contiguous()
        if is_real:
            src = src if src.dtype == torch.float32 else src.to(torch.float32)
        else:
            src = torch.view_as_real(src if src.dtype == torch.complex64 else src.to(torch.complex64))
        work = [(d, n) for d, n in zip(dims, lengths) if not (n == 1 and x.shape[d] == 1)]
        plan = _Plan(x.device)
        dst_final = torch.view_as_real(res)
        if not work:  # 0-d input or only length-1 transforms: one copy stage (to complex, scaled)
            plan.stockham(src, is_real, 1, 1, 1, res.numel(), dst_final, norm_mode, l_total)
        shape = list(x.shape)
        cur = src
        for idx, (d, n) in enumerate(work):
            last = idx == len(work) - 1
            outer = 1
            for v in shape[:d]:
                outer *= v
            inner = 1
            for v in shape[d + 1:]:
                inner *= v
            dst = dst_final if last else torch.empty(2 * outer * n * inner, dtype=torch.float32, device=x.device)
            run = plan.bluestein if max(_factor(n), default=1) > 64 else plan.stockham
            run(cur, is_real and idx == 0, outer, shape[d], n, inner, dst, norm_mode if last else 0, l_total)
            shape[d] = n
            cur = dst
    elif res.numel():
        res.zero_()
    if out is not None and res is not out:
        out.resize_(out_shape).copy_(res)
        return out
    return res
