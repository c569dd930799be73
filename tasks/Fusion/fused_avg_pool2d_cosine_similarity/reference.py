import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_avg_pool2d_cosine_similarity(x1: torch.Tensor, x2: torch.Tensor, kernel_size: int,
                                       stride: int = None, padding: int = 0,
                                       eps: float = 1e-08) -> torch.Tensor:
    sim = F.cosine_similarity(x1, x2, dim=1, eps=eps).unsqueeze(1)
    if stride is None:
        stride = kernel_size
    return F.avg_pool2d(sim, kernel_size=kernel_size, stride=stride, padding=padding)


def _pair(draw, shape, kernel_size, **kwargs):
    def make(c):
        return (draw(c, shape), draw(c, shape), kernel_size), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.0, high=2.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _zero_vectors(c):
    x1, x2 = c.randn(2, 5, 6, 6), c.randn(2, 5, 6, 6)
    x1[:, :, 0, :] = 0.0          # zero vectors: similarity 0 through the eps clamp
    x2[:, :, :, 1] = 0.0
    x2[1] = -3.0 * x1[1]          # exactly opposite vectors: similarity -1
    return (x1, x2, 2), {}


def _tiny_norm_eps(c):
    x1 = c.randn(1, 4, 8, 8) * 1e-3   # norms below eps = 0.1: the clamp matters
    return (x1, c.randn(1, 4, 8, 8), 3), {"stride": 1, "padding": 1, "eps": 0.1}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("zero_and_opposite", "edge", _zero_vectors),
        Case("eps_clamp", "edge", _tiny_norm_eps),
        Case("kernel_1", "edge", _pair(_normal(), (1, 3, 5, 7), 1)),
        Case("normal_f32", "small", _pair(_normal(), (2, 16, 31, 33), 2), dist="normal"),
        Case("normal_f32_stride1_pad1", "small",
             _pair(_normal(), (3, 8, 17, 23), 3, stride=1, padding=1), dist="normal"),
        Case("normal_f16", "small", _pair(_normal(f16), (2, 24, 29, 31), 3, stride=2),
             dist="normal"),
        Case("uniform_bf16_pad", "small",
             _pair(_uniform(bf16), (4, 12, 19, 21), 4, stride=3, padding=2), dist="uniform"),
        Case("uniform_f32_one_channel", "small", _pair(_uniform(), (2, 1, 45, 47), 2),
             dist="uniform"),
        Case("outliers_f32", "small", _pair(_outliers(), (2, 32, 25, 27), 2, stride=1),
             dist="outliers"),
        Case("outliers_bf16", "small", _pair(_outliers(bf16), (1, 64, 23, 29), 5, padding=2),
             dist="outliers"),
        Case("perf_f32_c64", "full", _pair(_normal(), (32, 64, 128, 128), 2), dist="normal"),
        Case("perf_bf16_c256", "full", _pair(_normal(bf16), (16, 256, 96, 96), 3, stride=1,
                                                padding=1), dist="normal"),
        Case("perf_f16_c32", "full", _pair(_uniform(f16), (64, 32, 224, 224), 4), dist="uniform"),
    ]


def cost(x1, x2, kernel_size, stride=None, padding=0, eps=1e-08):
    n, ch, h, w = x1.shape
    stride = stride or kernel_size
    ho = (h + 2 * padding - kernel_size) // stride + 1
    wo = (w + 2 * padding - kernel_size) // stride + 1
    return {"flops": 6 * x1.numel() + kernel_size * kernel_size * n * ho * wo,
            "bytes": 2 * x1.numel() * x1.element_size() + n * ho * wo * x1.element_size()}
