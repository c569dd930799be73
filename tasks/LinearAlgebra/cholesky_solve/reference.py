import torch

from kbx_worker.casegen import Case


def cholesky_solve(B, L, upper=False, out=None):
    X = torch.cholesky_solve(B, L, upper=upper)
    if out is not None:
        out.copy_(X)
        return out
    return X


def _draw(c, dist, *shape):
    if dist == "normal":
        return c.randn(*shape)
    if dist == "uniform":
        return c.uniform(*shape, low=-1.0, high=1.0)
    if dist == "outliers":
        return c.outliers(*shape, scale=30.0)
    raise ValueError(dist)


def _factor(c, dist, batch, n, upper):
    """Cholesky factor (*batch, n, n): triangular, positive diagonal in [e^-0.5, e^0.5], each row's
    off-diagonal absolute sum half its diagonal (well-conditioned). Lower, or its transpose."""
    g = torch.tril(_draw(c, dist, *batch, n, n), -1)
    mag = torch.exp(c.uniform(*batch, n, 1, low=-0.5, high=0.5))
    rowsum = g.abs().sum(-1, keepdim=True).clamp_min(1e-30)
    low = g * (0.5 * mag / rowsum) + torch.diag_embed(mag.squeeze(-1))
    return low.mT.contiguous() if upper else low


def _make(dist, batch, n, k, upper=False, out=False):
    def make(c):
        L = _factor(c, dist, batch, n, upper)
        B = _draw(c, dist, *batch, n, k)
        kw = {"upper": upper} if upper else {}
        if out:
            kw["out"] = torch.zeros(*batch, n, k, device=c.device)
        return (B, L), kw
    return make


def _fixed(upper):
    def make(c):
        B = torch.tensor([[[1.0], [2.0]], [[3.0], [4.0]]], device=c.device)
        L = torch.tensor([[[2.0, 0.0], [1.0, 1.0]], [[3.0, 0.0], [1.0, 2.0]]], device=c.device)
        if upper:
            L = L.mT.contiguous()
        return (B, L), ({"upper": True} if upper else {})
    return make


def cases():
    return [
        Case("fixed_lower", "edge", _fixed(False)),
        Case("fixed_upper", "edge", _fixed(True)),
        Case("one_by_one", "edge", _make("uniform", (6,), 1, 3)),
        Case("empty_batch", "edge", _make("normal", (0,), 3, 2)),
        Case("normal_b5_n24_k7", "small", _make("normal", (5,), 24, 7), dist="normal"),
        Case("uniform_b3_n40_k1_upper", "small", _make("uniform", (3,), 40, 1, upper=True),
             dist="uniform"),
        Case("outliers_b16_n12_k12", "small", _make("outliers", (16,), 12, 12), dist="outliers"),
        Case("normal_unbatched_n37_k3", "small", _make("normal", (), 37, 3), dist="normal"),
        Case("out_b2_n30_k5", "small", _make("normal", (2,), 30, 5, out=True), dist="normal"),
        Case("perf_b4096_n32_k16", "full", _make("normal", (4096,), 32, 16), dist="normal"),
        Case("perf_b1024_n64_k64_upper", "full", _make("uniform", (1024,), 64, 64, upper=True),
             dist="uniform"),
        Case("perf_n1024_k1024", "full", _make("normal", (), 1024, 1024), dist="normal"),
        Case("perf_n2048_k256", "full", _make("normal", (), 2048, 256), dist="normal"),
    ]


def cost(B, L, upper=False, out=None):
    n, k = B.shape[-2], B.shape[-1]
    batch = B.numel() // max(n * k, 1)
    elems = 2 * B.numel() + batch * n * (n + 1) // 2
    return {"flops": batch * 2 * n * n * k, "bytes": elems * B.element_size()}
