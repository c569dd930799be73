import math

import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _adam_block(p_ptr, g_ptr, m_ptr, v_ptr, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                bc2_sqrt, eps, neg_step_size, HAS_WD: tl.constexpr, offs, mask):
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask).to(tl.float32)
    if HAS_WD:
        g = g + weight_decay * p  # L2 decay folded into the gradient (grad itself is not written)
    m = m * beta1 + one_minus_beta1 * g
    v = v * beta2 + one_minus_beta2 * (g * g)
    # moments are rounded to their storage dtype before use, as the unfused update does
    m = m.to(m_ptr.dtype.element_ty).to(tl.float32)
    v = v.to(v_ptr.dtype.element_ty).to(tl.float32)
    denom = tl.sqrt_rn(v) / bc2_sqrt + eps
    p = p + neg_step_size * (m / denom)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)
    tl.store(v_ptr + offs, v.to(v_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _adam_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                 bc2_sqrt, eps, neg_step_size, HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    """One fused pass: read param, grad and both moments once, write param and moments once."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _adam_block(p_ptr, g_ptr, m_ptr, v_ptr, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                    bc2_sqrt, eps, neg_step_size, HAS_WD, offs, None)
    else:  # the last, partial block
        _adam_block(p_ptr, g_ptr, m_ptr, v_ptr, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                    bc2_sqrt, eps, neg_step_size, HAS_WD, offs, offs < n)


def Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0):
    param, grad = params["param"], params["grad"]
    exp_avg, exp_avg_sq, step = params["exp_avg"], params["exp_avg_sq"], params["step"]
    beta1, beta2 = betas
    tensors = (param, grad, exp_avg, exp_avg_sq)
    if any(t.shape != param.shape for t in tensors):
        raise ValueError("param, grad, exp_avg and exp_avg_sq must have one shape")
    # the update is in place; non-contiguous tensors go through contiguous copies written back at the end
    work = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    n = param.numel()
    if n:
        bc1 = 1.0 - beta1 ** step
        bc2_sqrt = math.sqrt(1.0 - beta2 ** step)
        _adam_kernel[(triton.cdiv(n, _BLOCK),)](
            work[0], work[1], work[2], work[3], n, float(weight_decay), beta1, 1.0 - beta1, beta2, 1.0 - beta2,
            bc2_sqrt, eps, -lr / bc1, HAS_WD=weight_decay != 0, BLOCK=_BLOCK, num_warps=8)
    for t, w in zip(tensors, work):
        if w is not t and t is not grad:
            t.copy_(w)
    return param, exp_avg, exp_avg_sq
