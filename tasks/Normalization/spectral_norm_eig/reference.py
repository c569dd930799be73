import torch

from kbx_worker.casegen import Case


def spectral_norm_eig(A, *, out=None):
    eigenvalues = torch.linalg.eig(A)[0]
    radius = torch.abs(eigenvalues).max(dim=-1)[0]
    if out is not None:
        out.copy_(radius)
        return out
    return radius


def _one(make, **kwargs):
    return lambda c: ((make(c),), kwargs)


def _fixed(rows):
    return _one(lambda c: torch.tensor(rows, device=c.device))


def _symmetric(*shape):
    def make(c):
        m = c.randn(*shape)
        return m + m.transpose(-1, -2)
    return make


def _known_spectrum(batch, n):
    """Q diag(d) Q^T with Q orthogonal: normal matrices with a prescribed, well separated spectrum."""
    def make(c):
        q = torch.linalg.qr(c.randn(batch, n, n, dtype=torch.float64))[0]
        d = c.uniform(batch, n, low=-3.0, high=3.0).to(torch.float64)
        return (q * d.unsqueeze(-2)) @ q.transpose(-1, -2)
    return lambda c: make(c).to(torch.float32)


def _with_out(make):
    def build(c):
        a = make(c)
        return (a,), {"out": torch.zeros(a.shape[:-2], device=c.device)}
    return build


def cases():
    return [
        Case("fixed_2x2", "edge", _fixed([[1.0, 2.0], [3.0, 4.0]])),
        Case("fixed_3x3_singular", "edge", _fixed([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])),
        Case("fixed_batch_2x2", "edge", _fixed([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])),
        Case("rotation_complex_pair", "edge", _fixed([[0.0, -2.0], [2.0, 0.0]])),
        Case("diagonal_negative", "edge", _fixed([[-3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])),
        Case("zero_and_identity", "edge", _fixed([[[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])),
        Case("one_by_one", "edge", _one(lambda c: c.randn(5, 1, 1))),
        Case("empty_batch", "edge", _one(lambda c: c.randn(0, 3, 3))),
        Case("out_f32", "edge", _with_out(lambda c: c.randn(3, 6, 6))),
        Case("normal_f32_batch", "small", _one(lambda c: c.randn(16, 32, 32)), dist="normal"),
        Case("normal_f32_single_odd", "small", _one(lambda c: c.randn(61, 61)), dist="normal"),
        Case("uniform_f32_odd", "small", _one(lambda c: c.uniform(8, 17, 17, low=-1, high=1)),
             dist="uniform"),
        Case("outliers_f32", "small", _one(lambda c: c.outliers(4, 33, 33, frac=0.01, scale=10.0)),
             dist="outliers"),
        Case("symmetric_f32", "small", _one(_symmetric(5, 48, 48)), dist="symmetric"),
        Case("known_spectrum_f32", "small", _one(_known_spectrum(6, 24)), dist="symmetric"),
        Case("out_normal_f32_4d", "small", _with_out(lambda c: c.randn(2, 3, 20, 20)), dist="normal"),
        # torch.linalg.eig runs on the host (MAGMA's geev). One eager call of each case costs about
        # 0.1 s: on an H100 host (session 37) a 32x32 matrix took 2.4 ms, a 96x96 one 13.6 ms, a
        # symmetric 128x128 one 14 ms and a 256x256 one 38 ms. The earlier 64x96x96 and
        # 32x128x128 cases took 0.87 and 0.45 s a call there (1.4 and 0.55 s on the H200), about
        # 7 s of the GPU's timing slot per side and run, the most of any task.
        Case("perf_f32_32x32x32", "full", _one(lambda c: c.randn(32, 32, 32)), dist="normal"),
        Case("perf_f32_8x96x96", "full", _one(lambda c: c.randn(8, 96, 96)), dist="normal"),
        Case("perf_f32_2x256x256", "full", _one(lambda c: c.randn(2, 256, 256)), dist="normal"),
        Case("perf_f32_symmetric_8x128x128", "full", _one(_symmetric(8, 128, 128)), dist="symmetric"),
    ]


def cost(A, *, out=None):
    n = A.shape[-1]
    batch = A.numel() // max(n * n, 1)
    return {"flops": 10 * batch * n ** 3, "bytes": (A.numel() + batch) * A.element_size()}
