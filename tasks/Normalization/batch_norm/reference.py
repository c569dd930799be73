import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _bn(shape, dtype=torch.float32, dist="normal", affine=True, stats=True, training=False, **kwargs):
    """Input of `shape` (channels in dim 1) with per-channel offsets and scales, float32 parameters."""
    def make(c):
        ch = shape[1]
        view = (1, ch) + (1,) * (len(shape) - 2)
        if dist == "uniform":
            x = c.uniform(*shape, low=-2, high=2)
        elif dist == "outliers":
            x = c.outliers(*shape, scale=20.0)
        else:
            x = c.randn(*shape)
        x = (x * c.uniform(ch, low=0.5, high=2).view(view) + c.randn(ch).view(view)).to(dtype)
        rm = c.randn(ch, std=0.5) if stats else None
        rv = c.uniform(ch, low=0.5, high=2.0) if stats else None
        w = c.randn(ch) if affine else None
        b = c.randn(ch) if affine else None
        return (x, rm, rv, w, b, training), kwargs
    return make


def _special_eval(c):
    s = c.special(torch.float32)
    x = s[:, None].repeat(1, 3)
    rm = torch.zeros(3, device=c.device)
    rv = torch.ones(3, device=c.device)
    w = torch.tensor([1.0, -1.0, 0.5], device=c.device)
    b = c.randn(3)
    return (x, rm, rv, w, b, False), {}


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    return [
        Case("special_eval_f32", "edge", _special_eval),
        Case("eval_plain_f32", "edge", _bn((2, 3, 4, 4), affine=False)),
        Case("train_min_batch_f32", "edge", _bn((2, 5), training=True)),
        Case("train_no_stats_f32", "edge", _bn((4, 6, 5), stats=False, training=True)),
        Case("eval_normal_f32", "small", _bn((8, 16, 9, 11)), dist="normal"),
        Case("train_normal_f32", "small", _bn((4, 8, 16, 16), training=True), dist="normal"),
        Case("train_outliers_f32", "small", _bn((4, 8, 15, 17), dist="outliers", training=True, momentum=0.2,
                                               eps=1e-3), dist="outliers"),
        Case("train_uniform_bf16", "small", _bn((6, 12, 13, 7), bf16, dist="uniform", training=True),
             dist="uniform"),
        Case("eval_normal_f16", "small", _bn((3, 10, 33), f16), dist="normal"),
        Case("train_1d_f32", "small", _bn((257, 31), training=True), dist="normal"),
        Case("train_1d_outliers_f16", "small", _bn((300, 40), f16, dist="outliers", training=True),
             dist="outliers"),
        Case("train_5d_f32", "small", _bn((2, 4, 3, 5, 7), dist="uniform", training=True, momentum=0.5),
             dist="uniform"),
        Case("perf_eval_f32", "full", _bn((64, 256, 56, 56)), dist="normal"),
        Case("perf_train_bf16", "full", _bn((128, 64, 112, 112), bf16, training=True), dist="normal"),
        Case("perf_train_f32", "full", _bn((256, 512, 14, 14), training=True), dist="normal"),
        Case("perf_train_1d_f32", "full", _bn((16384, 4096), training=True), dist="normal"),
    ]


def cost(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    n = input.numel()
    ch = input.shape[1]
    params = sum(4 * ch for t in (running_mean, running_var, weight, bias) if t is not None)
    if training and running_mean is not None:
        params += 4 * 2 * ch  # running statistics written back
    return {"flops": (6 if training else 2) * n, "bytes": 2 * n * input.element_size() + params}
