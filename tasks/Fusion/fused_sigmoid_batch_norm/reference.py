import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_sigmoid_batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
                             momentum=0.1, eps=1e-05):
    normalized = F.batch_norm(input, running_mean, running_var, weight, bias, training=training,
                              momentum=momentum, eps=eps)
    return torch.sigmoid(normalized)


def _draw(c, dist, shape, dtype, mean, std):
    if dist == "uniform":
        t = c.uniform(*shape, low=-1.7, high=1.7)
    elif dist == "outliers":
        t = c.outliers(*shape, scale=30.0)
    else:
        t = c.randn(*shape)
    # per-channel offset and scale so that batch statistics differ from 0 and 1
    view = (1, -1) + (1,) * (len(shape) - 2)
    return (t * std.view(view) + mean.view(view)).to(dtype)


def _make(shape, dtype=torch.float32, dist="normal", stats=True, affine=True, **kwargs):
    """input of shape (N, C, ...) with channel means in [-2, 2] and scales in [0.5, 3]; running
    statistics near (but not at) the true ones; gamma around 1, beta around 0; all float32."""
    def make(c):
        ch = shape[1]
        mean = c.uniform(ch, low=-2.0, high=2.0)
        std = c.uniform(ch, low=0.5, high=3.0)
        x = _draw(c, dist, shape, dtype, mean, std)
        rm = (mean + c.randn(ch) * 0.3) if stats else None
        rv = (std * std * c.uniform(ch, low=0.7, high=1.3)) if stats else None
        w = c.uniform(ch, low=0.5, high=1.5) if affine else None
        b = c.randn(ch) * 0.3 if affine else None
        return (x, rm, rv, w, b), dict(kwargs)
    return make


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("eval_no_affine_f32", "edge", _make((7, 5), affine=False)),
        Case("train_constant_channel_f32", "edge",
             lambda c: ((torch.full((6, 3, 4), 2.5, device=c.device), torch.zeros(3, device=c.device),
                         torch.ones(3, device=c.device)), {"training": True})),
        Case("train_two_samples_f32", "edge", _make((2, 4), training=True, momentum=0.5)),
        Case("train_no_stats_f32", "edge", _make((5, 3, 7), stats=False, training=True)),
        Case("empty_length_eval_f32", "edge", _make((3, 4, 0))),
        Case("normal_f32_eval", "small", _make((64, 37)), dist="normal"),
        Case("normal_f32_train_1d", "small", _make((16, 24, 33), training=True, momentum=0.2),
             dist="normal"),
        Case("uniform_f32_train_2d", "small", _make((4, 12, 15, 13), dist="uniform", training=True,
                                                    eps=1e-3), dist="uniform"),
        Case("uniform_f16_eval", "small", _make((8, 16, 31), dtype=f16, dist="uniform"),
             dist="uniform"),
        Case("outliers_bf16_train", "small", _make((6, 10, 17, 9), dtype=bf16, dist="outliers",
                                                   training=True), dist="outliers"),
        Case("outliers_f32_eval_2d", "small", _make((3, 7, 21, 22), dist="outliers", eps=1e-2),
             dist="outliers"),
        Case("perf_f32_eval_resnet_56", "full", _make((64, 256, 56, 56)), dist="normal"),
        Case("perf_f32_train_resnet_56", "full", _make((64, 256, 56, 56), training=True),
             dist="normal"),
        Case("perf_bf16_train_1d", "full", _make((256, 1024, 512), dtype=bf16, training=True),
             dist="normal"),
        Case("perf_f16_eval_features", "full", _make((131072, 512), dtype=f16), dist="normal"),
    ]


def cost(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
         eps=1e-05):
    n = input.numel()
    ch = input.shape[1]
    params = sum(4 * ch for t in (running_mean, running_var, weight, bias) if t is not None)
    updates = 8 * ch if training and running_mean is not None else 0
    passes = 2 if training else 1  # training needs the statistics before it can normalize
    return {"flops": (10 if training else 6) * n,
            "bytes": passes * n * input.element_size() + n * input.element_size() + params + updates}
