import torch
import triton
import triton.language as tl

# Spectral radius by repeated squaring plus a 2-dimensional Rayleigh-Ritz step, all in float64.
#
# B_k = A^(2^k) (rescaled every step) concentrates on the dominant invariant subspace: the share of an
# eigenvalue of modulus |lambda| falls like (|lambda| / rho)^(2^k), so _SQUARINGS = 40 separates moduli
# that differ by 1e-11 relatively. That subspace is one-dimensional (a real dominant eigenvalue) or
# two-dimensional (a complex-conjugate pair, or a real pair +-rho). A column b of B_K lies in it, so the
# Krylov space span{b, A b} is invariant and the eigenvalues of the 2x2 Arnoldi matrix Q^T A Q are the
# dominant eigenvalues themselves; rho is the larger modulus. Float64 keeps the rounding of ~40 products of
# n-term sums far below float32's resolution.
_SQUARINGS = 40


@triton.jit
def _square_kernel(x_ptr, c_ptr, pm_in_ptr, pm_out_ptr, n, n_tn, T,
                   SCALE: tl.constexpr, TP: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr):
    """C = (s X) @ (s X) for one BT x BT tile of matrix b (s = 1 / max|X| from the previous step's per-tile
    maxima, or 1), in float64 on tl.dot; the tile's max |C| goes to pm_out[b, tile]."""
    tile = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    tm = tile // n_tn
    tn = tile % n_tn
    rows = tm * BT + tl.arange(0, BT)
    cols = tn * BT + tl.arange(0, BT)
    base = b * n * n
    acc = tl.zeros([BT, BT], tl.float64)
    for k0 in range(0, n, BK):
        ks = k0 + tl.arange(0, BK)
        xa = tl.load(x_ptr + base + rows[:, None] * n + ks[None, :],
                     mask=(rows < n)[:, None] & (ks < n)[None, :], other=0.0).to(tl.float64)
        xb = tl.load(x_ptr + base + ks[:, None] * n + cols[None, :],
                     mask=(ks < n)[:, None] & (cols < n)[None, :], other=0.0).to(tl.float64)
        acc = tl.dot(xa, xb, acc, input_precision="ieee", out_dtype=tl.float64)
    if SCALE:
        t = tl.arange(0, TP)
        mx = tl.max(tl.load(pm_in_ptr + b * T + t, mask=t < T, other=0.0), axis=0)
        s = tl.where(mx > 0, 1.0 / mx, 1.0)
        acc = acc * (s * s)
    ok = (rows < n)[:, None] & (cols < n)[None, :]
    tl.store(c_ptr + base + rows[:, None] * n + cols[None, :], acc, mask=ok)
    tl.store(pm_out_ptr + b * T + tile, tl.max(tl.max(tl.abs(acc), axis=1), axis=0))


@triton.jit
def _ritz_kernel(a_ptr, a2_ptr, bk_ptr, out_ptr, n, tol, BN: tl.constexpr, BR: tl.constexpr):
    """One matrix per program. b = the column of B_K with the largest norm; w = A b and z = A^2 b (A^2 kept
    from the first squaring) are accumulated over row chunks of b, reading A and A^2 transposed so that
    the results stay in registers. Then two Arnoldi steps give H = Q^T A Q (2x2) and rho = max |eig(H)|;
    if A b is parallel to b (a real dominant eigenvalue), rho = |b^T A b| / |b|^2."""
    m = tl.program_id(0).to(tl.int64)
    base = m * n * n
    j = tl.arange(0, BN)
    j_ok = j < n
    # column norms of B_K
    cn = tl.zeros([BN], tl.float64)
    for r0 in range(0, n, BR):
        r = r0 + tl.arange(0, BR)
        v = tl.load(bk_ptr + base + r[:, None] * n + j[None, :], mask=(r < n)[:, None] & j_ok[None, :], other=0.0)
        cn += tl.sum(v * v, axis=0)
    jc = tl.argmax(cn, axis=0)
    b = tl.load(bk_ptr + base + j * n + jc, mask=j_ok, other=0.0)
    w = tl.zeros([BN], tl.float64)
    z = tl.zeros([BN], tl.float64)
    for i0 in range(0, n, BR):
        i = i0 + tl.arange(0, BR)
        ok = (i < n)[:, None] & j_ok[None, :]
        bi = tl.load(bk_ptr + base + i * n + jc, mask=i < n, other=0.0)
        at = tl.load(a_ptr + base + j[None, :] * n + i[:, None], mask=ok, other=0.0).to(tl.float64)
        w += tl.sum(at * bi[:, None], axis=0)
        a2t = tl.load(a2_ptr + base + j[None, :] * n + i[:, None], mask=ok, other=0.0)
        z += tl.sum(a2t * bi[:, None], axis=0)
    nb = tl.sqrt(tl.sum(b * b, axis=0))
    inv = tl.where(nb > 0, 1.0 / nb, 0.0)
    q1 = b * inv
    w = w * inv  # A q1
    z = z * inv  # A^2 q1
    h11 = tl.sum(q1 * w, axis=0)
    r = w - h11 * q1
    c = tl.sum(q1 * r, axis=0)  # re-orthogonalize once
    r = r - c * q1
    h11 = h11 + c
    h21 = tl.sqrt(tl.sum(r * r, axis=0))
    nw = tl.sqrt(tl.sum(w * w, axis=0))
    two_d = h21 > tol * nw
    inv21 = tl.where(two_d, 1.0 / tl.where(two_d, h21, 1.0), 0.0)
    q2 = r * inv21
    aq2 = (z - h11 * w) * inv21  # A q2 = (A^2 q1 - h11 A q1) / h21
    h12 = tl.sum(q1 * aq2, axis=0)
    h22 = tl.sum(q2 * aq2, axis=0)
    half = 0.5 * (h11 - h22)
    disc = half * half + h12 * h21
    det = h11 * h22 - h12 * h21
    mid = 0.5 * (h11 + h22)
    rho2 = tl.where(disc < 0, tl.sqrt(tl.maximum(det, 0.0)), tl.abs(mid) + tl.sqrt(tl.maximum(disc, 0.0)))
    rho = tl.where(two_d, rho2, tl.abs(h11))
    tl.store(out_ptr + m, rho.to(out_ptr.dtype.element_ty))


def spectral_norm_eig(A, *, out=None):
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError("spectral_norm_eig: A must be (*, n, n)")
    n = A.shape[-1]
    bshape = A.shape[:-2]
    res = out if out is not None else torch.empty(bshape, dtype=A.dtype, device=A.device)
    if tuple(res.shape) != tuple(bshape):
        res.resize_(bshape)
    nbatch = 1
    for s in bshape:
        nbatch *= s
    if nbatch == 0:
        return res
    if n == 0:
        raise RuntimeError("spectral_norm_eig: a 0 x 0 matrix has no eigenvalues")
    A = A if A.is_contiguous() else A.contiguous()
    dst = res if res.is_contiguous() else torch.empty(bshape, dtype=res.dtype, device=res.device)
    dev = A.device
    # 64 x 64 tiles only when they alone give a few waves of programs on the GPU
    bt = 64 if n > 48 and nbatch * triton.cdiv(n, 64) ** 2 >= 1024 else 32
    n_tn = triton.cdiv(n, bt)
    T = n_tn * n_tn
    tp = triton.next_power_of_2(T)
    a2 = torch.empty((nbatch, n, n), dtype=torch.float64, device=dev)
    bufs = [torch.empty((nbatch, n, n), dtype=torch.float64, device=dev) for _ in range(2)]
    pms = [torch.empty((nbatch, T), dtype=torch.float64, device=dev) for _ in range(3)]
    grid = (T, nbatch)
    warps = 4 if bt == 32 else 8
    # first squaring: A^2 (no rescaling: float32 inputs squared stay far inside float64's range)
    _square_kernel[grid](A, a2, pms[2], pms[2], n, n_tn, T, SCALE=False, TP=tp, BT=bt, BK=16, num_warps=warps)
    src, src_pm = a2, pms[2]
    for k in range(1, _SQUARINGS):
        dst_b, dst_pm = bufs[k % 2], pms[k % 2]
        _square_kernel[grid](src, dst_b, src_pm, dst_pm, n, n_tn, T, SCALE=True, TP=tp, BT=bt, BK=16,
                             num_warps=warps)
        src, src_pm = dst_b, dst_pm
    bn = triton.next_power_of_2(n)
    br = max(1, min(bn, 4096 // bn))
    _ritz_kernel[(nbatch,)](A, a2, src, dst, n, 1e-8, BN=bn, BR=br, num_warps=4 if bn <= 64 else 8)
    if dst is not res:
        res.copy_(dst)
    return res
