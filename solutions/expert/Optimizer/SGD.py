import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _sgd_block(p_ptr, g_ptr, b_ptr, weight_decay, neg_lr, momentum, one_minus_dampening, HAS_WD: tl.constexpr,
               MOMENTUM: tl.constexpr, READ_BUF: tl.constexpr, NESTEROV: tl.constexpr, offs, mask):
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    if HAS_WD:
        g = g + weight_decay * p
    if MOMENTUM:
        if READ_BUF:
            buf = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
            buf = buf * momentum + one_minus_dampening * g
        else:  # a fresh zero buffer: momentum * 0 + (1 - dampening) * g
            buf = one_minus_dampening * g
        buf = buf.to(b_ptr.dtype.element_ty).to(tl.float32)  # the stored buffer is the one used
        tl.store(b_ptr + offs, buf.to(b_ptr.dtype.element_ty), mask=mask)
        if NESTEROV:
            d = g + momentum * buf
        else:
            d = buf
    else:
        d = g
    p = p + neg_lr * d
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sgd_kernel(p_ptr, g_ptr, b_ptr, n, weight_decay, neg_lr, momentum, one_minus_dampening,
                HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr, READ_BUF: tl.constexpr, NESTEROV: tl.constexpr,
                BLOCK: tl.constexpr):
    """One fused pass over param, grad and the momentum buffer (read only when one was passed)."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _sgd_block(p_ptr, g_ptr, b_ptr, weight_decay, neg_lr, momentum, one_minus_dampening, HAS_WD, MOMENTUM,
                   READ_BUF, NESTEROV, offs, None)
    else:  # the last, partial block
        _sgd_block(p_ptr, g_ptr, b_ptr, weight_decay, neg_lr, momentum, one_minus_dampening, HAS_WD, MOMENTUM,
                   READ_BUF, NESTEROV, offs, offs < n)


def sgd_step(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, dampening=0.0,
             nesterov=False):
    use_momentum = momentum > 0
    fresh = use_momentum and momentum_buffer is None
    if fresh:
        momentum_buffer = torch.empty_like(grad, memory_format=torch.contiguous_format)
    tensors = [param, grad] + ([momentum_buffer] if use_momentum else [])
    if any(t.shape != param.shape for t in tensors):
        raise ValueError("param, grad and momentum_buffer must have one shape")
    work = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    n = param.numel()
    if n:
        _sgd_kernel[(triton.cdiv(n, _BLOCK),)](
            work[0], work[1], work[2] if use_momentum else work[0], n, float(weight_decay), -lr, float(momentum),
            1.0 - dampening, HAS_WD=weight_decay != 0, MOMENTUM=use_momentum, READ_BUF=not fresh,
            NESTEROV=bool(nesterov), BLOCK=_BLOCK, num_warps=8)
    for t, w in zip(tensors, work):
        if w is not t and t is not grad:
            t.copy_(w)
    return param, (momentum_buffer if use_momentum else None)
