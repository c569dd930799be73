import torch

from kbx_worker.casegen import Case


def Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0):
    param, grad = params["param"], params["grad"]
    exp_avg, exp_avg_sq, step = params["exp_avg"], params["exp_avg_sq"], params["step"]
    beta1, beta2 = betas
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
    return param, exp_avg, exp_avg_sq


def _state(shape, step, grad=None, fresh=False, pdtype=torch.float32, **kwargs):
    """params dict: param ~ N(0,1), grad from `grad` (default N(0,1)), state either zero (fresh) or a
    plausible running state (exp_avg ~ 0.1 N(0,1), exp_avg_sq ~ 0.01 U(0,1))."""
    def make(c):
        param = c.randn(*shape).to(pdtype)
        g = (grad(c) if grad is not None else c.randn(*shape)).to(pdtype)
        if fresh:
            m, v = torch.zeros(shape, device=c.device), torch.zeros(shape, device=c.device)
        else:
            m = c.randn(*shape, std=0.1)
            v = c.uniform(*shape, low=0.0, high=0.01)
        return ({"param": param, "grad": g, "exp_avg": m, "exp_avg_sq": v, "step": step},), kwargs
    return make


def cases():
    bf16 = torch.bfloat16
    return [
        Case("first_step_zero_state", "edge", _state((10, 5), 1, fresh=True)),
        Case("first_step_weight_decay", "edge", _state((10, 5), 1, fresh=True, weight_decay=0.1)),
        Case("zero_grad", "edge", _state((37,), 5, grad=lambda c: torch.zeros(37, device=c.device))),
        Case("zero_grad_zero_state", "edge",
             _state((37,), 1, grad=lambda c: torch.zeros(37, device=c.device), fresh=True)),
        Case("late_step", "edge", _state((10, 5), 100000)),
        Case("scalar_param", "edge", _state((), 3)),
        Case("empty", "edge", _state((0, 4), 2)),
        Case("wide_magnitudes", "edge",
             _state((64,), 7, grad=lambda c: c.randn(64) * torch.logspace(-20, 10, 64, device=c.device))),
        Case("normal_f32", "small", _state((128, 129), 10), dist="normal"),
        Case("normal_f32_wd_betas", "small",
             _state((1000, 17), 3, lr=3e-3, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.05), dist="normal"),
        Case("uniform_f32", "small", _state((4097,), 2, grad=lambda c: c.uniform(4097, low=-1, high=1)),
             dist="uniform"),
        Case("outliers_f32", "small", _state((333, 65), 50, grad=lambda c: c.outliers(333, 65)),
             dist="outliers"),
        Case("mixed_bf16_param_f32_state", "small",
             _state((257, 63), 4, pdtype=bf16, lr=0.05), dist="normal"),
        Case("perf_f32_16M", "full", _state((4096, 4096), 10), dist="normal"),
        Case("perf_f32_odd_50M", "full", _state((50331653,), 10, weight_decay=0.01), dist="normal"),
        Case("perf_f32_64M", "full", _state((8192, 8192), 1000), dist="normal"),
        Case("perf_mixed_bf16_64M", "full", _state((8192, 8192), 10, pdtype=bf16, lr=0.01),
             dist="normal"),
    ]


def cost(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0):
    p, g = params["param"], params["grad"]
    m, v = params["exp_avg"], params["exp_avg_sq"]
    n = p.numel()
    # read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq
    moved = n * (2 * p.element_size() + g.element_size() + 2 * m.element_size() + 2 * v.element_size())
    return {"flops": 14 * n, "bytes": moved}
