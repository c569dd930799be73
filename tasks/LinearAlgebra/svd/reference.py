import math

import torch

from kbx_worker.casegen import Case


def svd(A, full_matrices=True):
    U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
    # Canonical form (kbx): for each singular triplet i (i < k = min(m, n)), the signs of U[..., i]
    # and Vh[..., i, :] are flipped together so that the entries of U[..., i] sum to a positive
    # number. With distinct singular values and those sums away from zero (true for every input
    # here) U, S and Vh are then unique. Columns of U / rows of Vh beyond k (full_matrices=True on
    # a non-square matrix) are not unique and do not occur in the cases.
    k = S.shape[-1]
    s = torch.where(U[..., :, :k].sum(dim=-2) < 0, -1.0, 1.0).to(U.dtype)
    u_scale = torch.ones(U.shape[:-2] + U.shape[-1:], dtype=U.dtype, device=U.device)
    u_scale[..., :k] = s
    v_scale = torch.ones(Vh.shape[:-1], dtype=Vh.dtype, device=Vh.device)
    v_scale[..., :k] = s
    return U * u_scale.unsqueeze(-2), S, Vh * v_scale.unsqueeze(-1)


def _orth(c, batch, n):
    q, _ = torch.linalg.qr(c.randn(*batch, n, n))
    return q


def _orth_ones(c, batch, n):
    """Orthogonal (*batch, n, n) matrices Q with Q^T 1 = 1 (every column sums to 1)."""
    dev = c.device
    q = torch.eye(n, device=dev).expand(*batch, n, n).clone()
    if n > 1:
        q[..., 1:, 1:] = _orth(c, batch, n - 1)
        u = torch.full((n,), -1.0 / math.sqrt(n), device=dev)
        u[0] += 1.0
        h = torch.eye(n, device=dev) - (2.0 / (u @ u)) * torch.outer(u, u)
        q = h @ q @ h
    return q


def _sigma(c, spectrum, batch, k):
    """Descending singular values with gaps of at least 0.5/k (relative to the largest)."""
    i = torch.arange(k, device=c.device, dtype=torch.float32)
    if spectrum == "linear":
        return (2.0 - i / k).expand(*batch, k).contiguous()
    if spectrum == "geometric":
        return (10.0 ** (-i / k)).expand(*batch, k).contiguous()
    if spectrum == "jittered":
        return 2.0 - (i + 0.5 * c.uniform(*batch, k)) / k
    raise ValueError(spectrum)


def _matrix(c, spectrum, batch, m, n):
    """U diag(sigma) V^T where every left singular vector sums to 1."""
    k = min(m, n)
    u = _orth_ones(c, batch, m)[..., :k]
    v = _orth(c, batch, n)[..., :k]
    return (u * _sigma(c, spectrum, batch, k).unsqueeze(-2)) @ v.mT


def _make(spectrum, batch, m, n, full_matrices=None):
    def make(c):
        kw = {} if full_matrices is None else {"full_matrices": full_matrices}
        return (_matrix(c, spectrum, batch, m, n),), kw
    return make


def _fixed(rows, full_matrices):
    return lambda c: ((torch.tensor(rows, device=c.device),), {"full_matrices": full_matrices})


def cases():
    return [
        Case("fixed_diag_3x3", "edge",
             _fixed([[3.0, 0.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 1.0]], True)),
        Case("fixed_3x2_reduced", "edge", _fixed([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], False)),
        Case("one_by_one", "edge", lambda c: ((c.randn(5, 1, 1),), {})),
        Case("linear_b4_n24", "small", _make("linear", (4,), 24, 24, True), dist="linear"),
        Case("geometric_b3_m40_n16_reduced", "small",
             _make("geometric", (3,), 40, 16, False), dist="geometric"),
        Case("jittered_b2_m20_n44_reduced", "small",
             _make("jittered", (2,), 20, 44, False), dist="jittered"),
        Case("jittered_unbatched_n30", "small", _make("jittered", (), 30, 30), dist="jittered"),
        Case("linear_b16_n8", "small", _make("linear", (16,), 8, 8), dist="linear"),
        Case("perf_b1024_n32", "full", _make("jittered", (1024,), 32, 32), dist="jittered"),
        Case("perf_b32_n64", "full", _make("linear", (32,), 64, 64), dist="linear"),
        Case("perf_n1024", "full", _make("jittered", (), 1024, 1024), dist="jittered"),
        Case("perf_m2048_n512_reduced", "full", _make("geometric", (), 2048, 512, False),
             dist="geometric"),
    ]


def cost(A, full_matrices=True):
    m, n = A.shape[-2], A.shape[-1]
    batch = A.numel() // max(m * n, 1)
    big, k = max(m, n), min(m, n)
    flops = batch * (14 * big * k * k + 8 * k ** 3)
    if full_matrices:
        out_elems = m * m + k + n * n
    else:
        out_elems = m * k + k + k * n
    return {"flops": flops, "bytes": (A.numel() + batch * out_elems) * A.element_size()}
