import torch

from kbx_worker.casegen import Case


def adamw_step(param, grad, exp_avg, exp_avg_sq, step, lr=0.001, beta1=0.9, beta2=0.999, eps=1e-08,
               weight_decay=0.01):
    param.mul_(1 - lr * weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-step_size)
    return param, exp_avg, exp_avg_sq


def _state(shape, step, dist="normal", fresh=False, pdtype=torch.float32, sdtype=torch.float32, **kwargs):
    """param, grad, and optimizer state as after some earlier steps (zeros when fresh)."""
    def make(c):
        param = c.randn(*shape).to(pdtype)
        if dist == "uniform":
            grad = c.uniform(*shape, low=-1, high=1)
        elif dist == "outliers":
            grad = c.outliers(*shape, scale=100.0)
        else:
            grad = c.randn(*shape)
        grad = grad.to(pdtype)
        if fresh:
            exp_avg = torch.zeros(shape, dtype=sdtype, device=c.device)
            exp_avg_sq = torch.zeros(shape, dtype=sdtype, device=c.device)
        else:
            exp_avg = (c.randn(*shape) * 0.1).to(sdtype)
            exp_avg_sq = (c.randn(*shape) * 0.1).square().to(sdtype)
        return (param, grad, exp_avg, exp_avg_sq, step), kwargs
    return make


def _edge_grads(c):
    fi = torch.finfo(torch.float32)
    grad = torch.tensor([0.0, -0.0, 1.0, -1.0, fi.tiny, -fi.tiny, fi.tiny / 4, 1e-20, -1e-20, 1e15, -1e15, 3.0],
                        device=c.device)
    param = c.randn(grad.numel())
    zeros = torch.zeros_like(grad)
    return (param, grad, zeros, zeros.clone(), 1), {}


def cases():
    bf16 = torch.bfloat16
    return [
        Case("first_step_f32", "edge", _state((10, 5), 1, fresh=True)),
        Case("first_step_wd_f32", "edge", _state((10, 5), 1, fresh=True, weight_decay=0.1)),
        Case("step100_f32", "edge", _state((10, 5), 100)),
        Case("edge_grads_f32", "edge", _edge_grads),
        Case("empty_f32", "edge", _state((0, 4), 3)),
        Case("normal_f32", "small", _state((1000, 37), 5), dist="normal"),
        Case("uniform_f32_late", "small",
             _state((3, 5, 1021), 1000, dist="uniform", lr=0.01, beta2=0.99, weight_decay=0.1), dist="uniform"),
        Case("outliers_f32", "small", _state((7919,), 10, dist="outliers", eps=1e-6), dist="outliers"),
        Case("normal_bf16_params_f32_state", "small",
             _state((333, 65), 3, pdtype=bf16, lr=0.01), dist="normal"),
        Case("uniform_f32_no_decay", "small",
             _state((4097,), 2, dist="uniform", weight_decay=0.0, beta1=0.8), dist="uniform"),
        Case("perf_f32_64M", "full", _state((8192, 8192), 10), dist="normal"),
        Case("perf_f32_16M_late", "full", _state((4096, 4096), 1000, lr=3e-4), dist="normal"),
        Case("perf_bf16_params_32M", "full", _state((32 << 20,), 50, pdtype=bf16), dist="normal"),
        Case("perf_f32_odd", "full", _state((10_000_019,), 7, dist="uniform"), dist="uniform"),
    ]


def cost(param, grad, exp_avg, exp_avg_sq, step, **kwargs):
    n = param.numel()
    nbytes = n * (2 * param.element_size() + grad.element_size()
                  + 2 * exp_avg.element_size() + 2 * exp_avg_sq.element_size())
    return {"flops": 14 * n, "bytes": nbytes}
