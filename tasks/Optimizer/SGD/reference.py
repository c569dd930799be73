import torch

from kbx_worker.casegen import Case


def sgd_step(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, dampening=0.0,
             nesterov=False):
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    if momentum > 0:
        if momentum_buffer is None:
            momentum_buffer = torch.zeros_like(grad)
        momentum_buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
        if nesterov:
            grad = grad.add(momentum_buffer, alpha=momentum)
        else:
            grad = momentum_buffer
    param.add_(grad, alpha=-lr)
    if momentum > 0:
        return param, momentum_buffer
    return param, None


def _state(shape, grad=None, buf="random", pdtype=torch.float32, **kwargs):
    """buf: "random" (a running buffer), "zeros" (a fresh buffer tensor) or None (no buffer passed)."""
    def make(c):
        param = c.randn(*shape).to(pdtype)
        g = (grad(c) if grad is not None else c.randn(*shape)).to(pdtype)
        if buf == "random":
            b = c.randn(*shape, std=0.5)
        elif buf == "zeros":
            b = torch.zeros(shape, device=c.device)
        else:
            b = None
        return (param, g, b), kwargs
    return make


def cases():
    bf16 = torch.bfloat16
    return [
        Case("zero_buffer", "edge", _state((256,), buf="zeros")),
        Case("none_buffer", "edge", _state((300,), buf=None, dampening=0.1)),
        Case("none_buffer_nesterov", "edge", _state((7, 11), buf=None, nesterov=True, weight_decay=0.01)),
        Case("nesterov_zero_buffer", "edge", _state((128,), buf="zeros", nesterov=True)),
        Case("special_grad", "edge",
             _state((18,), grad=lambda c: c.special(torch.float32), lr=0.05)),
        Case("scalar_param", "edge", _state((), lr=0.01, momentum=0.5)),
        Case("empty", "edge", _state((2, 0))),
        Case("normal_f32", "small", _state((128, 129)), dist="normal"),
        Case("normal_f32_nesterov_wd", "small",
             _state((512,), lr=0.05, momentum=0.9, weight_decay=0.01, nesterov=True), dist="normal"),
        Case("uniform_f32_dampening", "small",
             _state((4097,), grad=lambda c: c.uniform(4097, low=-1, high=1), lr=0.01, momentum=0.95,
                    dampening=0.5), dist="uniform"),
        Case("outliers_f32_nesterov", "small",
             _state((333, 65), grad=lambda c: c.outliers(333, 65), lr=1e-3, nesterov=True),
             dist="outliers"),
        Case("mixed_bf16_param_f32_buffer", "small",
             _state((257, 63), pdtype=bf16, lr=0.05, weight_decay=1e-4), dist="normal"),
        Case("perf_f32_16M", "full", _state((4096, 4096), lr=0.01), dist="normal"),
        Case("perf_f32_odd_50M_nesterov", "full",
             _state((50331653,), lr=0.01, weight_decay=5e-4, nesterov=True), dist="normal"),
        Case("perf_f32_64M", "full", _state((8192, 8192), lr=0.01, weight_decay=1e-4), dist="normal"),
        Case("perf_mixed_bf16_64M", "full", _state((8192, 8192), pdtype=bf16, lr=0.01), dist="normal"),
    ]


def cost(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, dampening=0.0,
         nesterov=False):
    n = param.numel()
    moved = n * (2 * param.element_size() + grad.element_size())
    if momentum > 0:
        bes = 4 if momentum_buffer is None else momentum_buffer.element_size()
        moved += n * bes * (1 if momentum_buffer is None else 2)
    return {"flops": 6 * n, "bytes": moved}
