import torch

from kbx_worker.casegen import Case


def rmsprop_step(param, grad, square_avg, lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0.0):
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    avg = square_avg.sqrt().add(eps)
    param.addcdiv_(grad, avg, value=-lr)
    return param, square_avg


def _state(shape, grad=None, fresh=False, pdtype=torch.float32, **kwargs):
    def make(c):
        param = c.randn(*shape).to(pdtype)
        g = (grad(c) if grad is not None else c.randn(*shape)).to(pdtype)
        sq = torch.zeros(shape, device=c.device) if fresh else c.uniform(*shape, low=0.0, high=0.01)
        return (param, g, sq), kwargs
    return make


def _zeros(n):
    return lambda c: torch.zeros(n, device=c.device)


def cases():
    bf16 = torch.bfloat16
    return [
        Case("basic_fresh_state", "edge", _state((128,), fresh=True, lr=1e-2, alpha=0.99, eps=1e-8)),
        Case("weight_decay_fresh", "edge", _state((256,), fresh=True, lr=1e-3, alpha=0.95, eps=1e-6,
                                                  weight_decay=0.1)),
        Case("zero_grad_zero_state", "edge", _state((37,), grad=_zeros(37), fresh=True)),
        Case("zero_grad", "edge", _state((37,), grad=_zeros(37))),
        Case("scalar_param", "edge", _state((), lr=5e-3, alpha=0.9)),
        Case("empty", "edge", _state((0,))),
        Case("wide_magnitudes", "edge",
             _state((64,), grad=lambda c: c.randn(64) * torch.logspace(-12, 12, 64, device=c.device))),
        Case("normal_f32", "small", _state((128, 129)), dist="normal"),
        Case("normal_f32_wd", "small", _state((1000, 17), lr=3e-3, alpha=0.9, eps=1e-6, weight_decay=0.05),
             dist="normal"),
        Case("uniform_f32", "small", _state((4097,), grad=lambda c: c.uniform(4097, low=-1, high=1)),
             dist="uniform"),
        Case("outliers_f32", "small", _state((333, 65), grad=lambda c: c.outliers(333, 65)),
             dist="outliers"),
        Case("mixed_bf16_param_f32_state", "small", _state((257, 63), pdtype=bf16, lr=0.05),
             dist="normal"),
        Case("perf_f32_16M", "full", _state((4096, 4096)), dist="normal"),
        Case("perf_f32_odd_50M", "full", _state((50331653,), weight_decay=0.01), dist="normal"),
        Case("perf_f32_64M", "full", _state((8192, 8192), lr=1e-3), dist="normal"),
        Case("perf_mixed_bf16_64M", "full", _state((8192, 8192), pdtype=bf16, lr=0.01), dist="normal"),
    ]


def cost(param, grad, square_avg, lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0.0):
    n = param.numel()
    # read param, grad, square_avg; write param, square_avg
    moved = n * (2 * param.element_size() + grad.element_size() + 2 * square_avg.element_size())
    return {"flops": 9 * n, "bytes": moved}
