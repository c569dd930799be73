import torch

from kbx_worker.casegen import Case


def lion_step(param, grad, exp_avg, lr=0.0001, beta1=0.9, beta2=0.99, weight_decay=0.0):
    update = exp_avg.mul(beta1).add(grad, alpha=1 - beta1)
    if weight_decay != 0:
        param.mul_(1 - lr * weight_decay)
    param.add_(torch.sign(update), alpha=-lr)
    exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
    return param, exp_avg


def _separated(m, g, beta1):
    """Move grad where |beta1*m + (1-beta1)*g| is tiny, so that sign(update) does not hinge on rounding."""
    u = beta1 * m.double() + (1 - beta1) * g.double()
    push = torch.where(g >= 0, 1.0, -1.0) * (0.05 / (1 - beta1))
    return torch.where(u.abs() < 1e-3, g + push.to(g.dtype), g)


def _state(shape, grad=None, fresh=False, pdtype=torch.float32, beta1=0.9, **kwargs):
    def make(c):
        param = c.randn(*shape).to(pdtype)
        g = (grad(c) if grad is not None else c.randn(*shape)).to(pdtype)
        m = torch.zeros(shape, device=c.device) if fresh else c.randn(*shape, std=0.1)
        g = _separated(m, g.float(), beta1).to(pdtype)
        if beta1 != 0.9:
            kwargs["beta1"] = beta1
        return (param, g, m), kwargs
    return make


def _zero_update(c):
    """grad and exp_avg zero in half of the entries: there the update is exactly 0 and sign() gives 0."""
    param = c.randn(64)
    g = c.randn(64)
    m = c.randn(64, std=0.1)
    keep = torch.arange(64, device=c.device) % 2 == 0
    g = torch.where(keep, _separated(m, g, 0.9), torch.zeros_like(g))
    m = torch.where(keep, m, torch.zeros_like(m))
    return (param, g, m), {"lr": 1e-3}


def cases():
    bf16 = torch.bfloat16
    return [
        Case("basic_fresh_state", "edge", _state((128,), fresh=True, lr=1e-3, beta2=0.99)),
        Case("weight_decay", "edge", _state((256,), fresh=True, lr=1e-4, beta1=0.95, beta2=0.98,
                                            weight_decay=0.1)),
        Case("exact_zero_update", "edge", _zero_update),
        Case("scalar_param", "edge", _state((), lr=5e-4)),
        Case("empty", "edge", _state((3, 0))),
        Case("normal_f32", "small", _state((128, 129), lr=1e-3), dist="normal"),
        Case("normal_f32_wd", "small", _state((1000, 17), lr=3e-4, beta1=0.95, beta2=0.98,
                                              weight_decay=0.5), dist="normal"),
        Case("uniform_f32", "small", _state((4097,), grad=lambda c: c.uniform(4097, low=-1, high=1),
                                            lr=2e-3), dist="uniform"),
        Case("outliers_f32", "small", _state((333, 65), grad=lambda c: c.outliers(333, 65), lr=1e-3),
             dist="outliers"),
        Case("mixed_bf16_param_f32_state", "small", _state((257, 63), pdtype=bf16, lr=0.05,
                                                           weight_decay=0.1), dist="normal"),
        Case("perf_f32_16M", "full", _state((4096, 4096), lr=1e-4), dist="normal"),
        Case("perf_f32_odd_50M", "full", _state((50331653,), lr=1e-4, weight_decay=0.1), dist="normal"),
        Case("perf_f32_64M", "full", _state((8192, 8192), lr=3e-4), dist="normal"),
        Case("perf_mixed_bf16_64M", "full", _state((8192, 8192), pdtype=bf16, lr=0.01), dist="normal"),
    ]


def cost(param, grad, exp_avg, lr=0.0001, beta1=0.9, beta2=0.99, weight_decay=0.0):
    n = param.numel()
    # read param, grad, exp_avg; write param, exp_avg
    moved = n * (2 * param.element_size() + grad.element_size() + 2 * exp_avg.element_size())
    return {"flops": 9 * n, "bytes": moved}
