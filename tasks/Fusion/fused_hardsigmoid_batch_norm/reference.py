import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_hardsigmoid_batch_norm(x: torch.Tensor, running_mean: torch.Tensor,
                                 running_var: torch.Tensor, weight: torch.Tensor = None,
                                 bias: torch.Tensor = None, training: bool = False,
                                 momentum: float = 0.1, eps: float = 1e-05,
                                 inplace: bool = False) -> torch.Tensor:
    normed = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    return F.hardsigmoid(normed, inplace=inplace)


def _make(draw, shape, affine=True, stats=True, **kwargs):
    def make(c):
        x = draw(c, shape)
        ch = shape[1]
        # running statistics near the data's (so eval-mode outputs use the whole hardsigmoid range)
        rm = c.randn(ch, std=0.5) if stats else None
        rv = c.uniform(ch, low=0.5, high=2.0) if stats else None
        w = c.uniform(ch, low=0.5, high=2.0) * torch.where(c.bernoulli(ch, p=0.2), -1.0, 1.0) \
            if affine else None
        b = c.randn(ch) if affine else None
        return (x, rm, rv, w, b), dict(kwargs)
    return make


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype, std=1.5)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-4.0, high=6.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype, scale=50.0)


def _special(c):
    x = c.special(torch.float32).reshape(3, 6)
    return (x, torch.zeros(6, device=c.device), torch.ones(6, device=c.device)), {}


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = _normal()
    tr = {"training": True}
    return [
        Case("special_eval_defaults", "edge", _special),
        Case("train_no_running_stats", "edge", _make(n, (6, 5), stats=False, **tr)),
        Case("train_2d_no_affine", "edge", _make(n, (9, 4), affine=False, momentum=0.5, **tr)),
        Case("eval_empty_batch", "edge", _make(n, (0, 3, 4, 4))),
        Case("eval_normal_f32", "small", _make(n, (8, 12, 17, 19)), dist="normal"),
        Case("train_normal_f32_momentum", "small",
             _make(n, (8, 12, 17, 19), momentum=0.3, eps=1e-3, **tr), dist="normal"),
        Case("eval_normal_bf16_3d_inplace", "small",
             _make(_normal(bf16), (16, 24, 65), inplace=True), dist="normal"),
        Case("train_uniform_f16", "small", _make(_uniform(f16), (4, 16, 21, 23), **tr),
             dist="uniform"),
        Case("eval_uniform_f32_no_affine", "small", _make(_uniform(), (5, 7, 31, 33),
                                                          affine=False), dist="uniform"),
        Case("train_outliers_f32", "small", _make(_outliers(), (6, 10, 25, 27), **tr),
             dist="outliers"),
        Case("eval_outliers_bf16", "small", _make(_outliers(bf16), (3, 32, 20, 20)),
             dist="outliers"),
        Case("perf_eval_f32", "full", _make(n, (64, 256, 56, 56)), dist="normal"),
        Case("perf_train_bf16", "full", _make(_normal(bf16), (128, 128, 64, 64), **tr),
             dist="normal"),
        Case("perf_train_f32", "full", _make(_uniform(), (32, 512, 28, 28), **tr),
             dist="uniform"),
        Case("perf_eval_f16", "full", _make(_normal(f16), (256, 64, 64, 64)), dist="normal"),
    ]


def cost(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
         eps=1e-05, inplace=False):
    n = x.numel()
    ch = x.shape[1]
    params = sum(4 * ch for t in (running_mean, running_var, weight, bias) if t is not None)
    return {"flops": 10 * n, "bytes": 2 * n * x.element_size() + params}
