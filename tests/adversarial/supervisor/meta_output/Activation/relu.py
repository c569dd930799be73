# Attack: return a tensor on the meta device (shape and dtype right, no values at all). Expected:
# output_violation (the output is on the wrong device), not a crash of the worker's own code.
import torch
import triton


@triton.jit
def _unused(x_ptr):
    pass


def relu(input, inplace=False):
    return torch.empty(input.shape, dtype=input.dtype, device="meta")
