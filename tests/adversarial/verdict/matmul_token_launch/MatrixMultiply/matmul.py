"""Hostile: torch.matmul does the work behind a token Triton launch that touches one element.
Correct values (it passes on the CPU, where no probe sees the kernels); on the GPU the timed calls'
compute is cuBLAS: fallback under --track triton, glue rule or not."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr))


def matmul(tensor1, tensor2):
    out = torch.matmul(tensor1, tensor2)
    if out.numel():
        scratch = torch.empty(1, dtype=out.dtype, device=out.device)
        touch_kernel[(1,)](out, scratch)
    return out
