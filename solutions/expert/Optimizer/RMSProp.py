import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _rmsprop_block(p_ptr, g_ptr, s_ptr, weight_decay, neg_lr, alpha, one_minus_alpha, eps,
                   HAS_WD: tl.constexpr, offs, mask):
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    s = tl.load(s_ptr + offs, mask=mask).to(tl.float32)
    if HAS_WD:
        g = g + weight_decay * p
    s = s * alpha + one_minus_alpha * (g * g)
    s = s.to(s_ptr.dtype.element_ty).to(tl.float32)  # the stored average is the one used
    p = p + neg_lr * (g / (tl.sqrt_rn(s) + eps))
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + offs, s.to(s_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsprop_kernel(p_ptr, g_ptr, s_ptr, n, weight_decay, neg_lr, alpha, one_minus_alpha, eps,
                    HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    """One fused pass: read param, grad and square_avg once, write param and square_avg once."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _rmsprop_block(p_ptr, g_ptr, s_ptr, weight_decay, neg_lr, alpha, one_minus_alpha, eps, HAS_WD, offs,
                       None)
    else:  # the last, partial block
        _rmsprop_block(p_ptr, g_ptr, s_ptr, weight_decay, neg_lr, alpha, one_minus_alpha, eps, HAS_WD, offs,
                       offs < n)


def rmsprop_step(param, grad, square_avg, lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0.0):
    tensors = (param, grad, square_avg)
    if any(t.shape != param.shape for t in tensors):
        raise ValueError("param, grad and square_avg must have one shape")
    work = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    n = param.numel()
    if n:
        _rmsprop_kernel[(triton.cdiv(n, _BLOCK),)](
            work[0], work[1], work[2], n, float(weight_decay), -lr, alpha, 1.0 - alpha, eps,
            HAS_WD=weight_decay != 0, BLOCK=_BLOCK, num_warps=8)
    for t, w in zip(tensors, work):
        if w is not t and t is not grad:
            t.copy_(w)
    return param, square_avg
