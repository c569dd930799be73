import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _lion_block(p_ptr, g_ptr, m_ptr, decay, neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2,
                HAS_WD: tl.constexpr, offs, mask):
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    u = m * beta1 + one_minus_beta1 * g  # update direction from the old exp_avg
    sign = tl.where(u > 0, 1.0, tl.where(u < 0, -1.0, 0.0))
    sign = tl.where(u != u, u, sign)  # sign(NaN) is NaN
    if HAS_WD:
        p = p * decay
    p = p + neg_lr * sign
    m = m * beta2 + one_minus_beta2 * g
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _lion_kernel(p_ptr, g_ptr, m_ptr, n, decay, neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2,
                 HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    """One fused pass: read param, grad and exp_avg once, write param and exp_avg once."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _lion_block(p_ptr, g_ptr, m_ptr, decay, neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2,
                    HAS_WD, offs, None)
    else:  # the last, partial block
        _lion_block(p_ptr, g_ptr, m_ptr, decay, neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2,
                    HAS_WD, offs, offs < n)


def lion_step(param, grad, exp_avg, lr=0.0001, beta1=0.9, beta2=0.99, weight_decay=0.0):
    tensors = (param, grad, exp_avg)
    if any(t.shape != param.shape for t in tensors):
        raise ValueError("param, grad and exp_avg must have one shape")
    work = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    n = param.numel()
    if n:
        _lion_kernel[(triton.cdiv(n, _BLOCK),)](
            work[0], work[1], work[2], n, 1.0 - lr * weight_decay, -lr, beta1, 1.0 - beta1, beta2, 1.0 - beta2,
            HAS_WD=weight_decay != 0, BLOCK=_BLOCK, num_warps=8)
    for t, w in zip(tensors, work):
        if w is not t and t is not grad:
            t.copy_(w)
    return param, exp_avg
