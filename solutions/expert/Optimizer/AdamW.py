import math

import torch
import triton
import triton.language as tl

_BLOCK = 2048


@triton.jit
def _adamw_block(p_ptr, g_ptr, m_ptr, v_ptr, decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                 inv_bc2_sqrt, eps, neg_step_size, offs, mask):
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask).to(tl.float32)
    p = p * decay
    m = m * beta1 + one_minus_beta1 * g
    v = v * beta2 + one_minus_beta2 * (g * g)
    # moments are rounded to their storage dtype before use, as the unfused update does
    m = m.to(m_ptr.dtype.element_ty).to(tl.float32)
    v = v.to(v_ptr.dtype.element_ty).to(tl.float32)
    denom = tl.sqrt_rn(v) * inv_bc2_sqrt + eps
    p = p + neg_step_size * (m / denom)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)
    tl.store(v_ptr + offs, v.to(v_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n, decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                  inv_bc2_sqrt, eps, neg_step_size, BLOCK: tl.constexpr):
    """One fused pass: read param, grad and both moments once, write param and moments once."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _adamw_block(p_ptr, g_ptr, m_ptr, v_ptr, decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                     inv_bc2_sqrt, eps, neg_step_size, offs, None)
    else:  # the last, partial block
        _adamw_block(p_ptr, g_ptr, m_ptr, v_ptr, decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
                     inv_bc2_sqrt, eps, neg_step_size, offs, offs < n)


def adamw_step(param, grad, exp_avg, exp_avg_sq, step, lr=0.001, beta1=0.9, beta2=0.999, eps=1e-08,
               weight_decay=0.01):
    tensors = (param, grad, exp_avg, exp_avg_sq)
    if any(t.shape != param.shape for t in tensors):
        raise ValueError("param, grad, exp_avg and exp_avg_sq must have one shape")
    # the update is in place; non-contiguous tensors go through contiguous copies written back at the end
    work = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    n = param.numel()
    if n:
        bc1 = 1.0 - beta1 ** step
        bc2 = 1.0 - beta2 ** step
        _adamw_kernel[(triton.cdiv(n, _BLOCK),)](
            work[0], work[1], work[2], work[3], n, 1.0 - lr * weight_decay, beta1, 1.0 - beta1, beta2,
            1.0 - beta2, 1.0 / math.sqrt(bc2), eps, -lr / bc1, BLOCK=_BLOCK, num_warps=8)
    for t, w in zip(tensors, work):
        if w is not t and t is not grad:
            t.copy_(w)
    return param, exp_avg, exp_avg_sq
