"""Honest, odd strides: permute_copy without any copy but its own. The permuted view
(input.permute(dims), no data moved) is read through its strides, whatever they are, by one Triton
kernel that writes the contiguous result: the candidate must pass at every level, and on the GPU
all of its time is its own kernel's."""
import torch
import triton
import triton.language as tl

_BLOCK = 1024
_MAX_DIMS = 5


@triton.jit
def _gather_kernel(src_ptr, out_ptr, n,
                   d1, d2, d3, d4,
                   s0, s1, s2, s3, s4,
                   BLOCK: tl.constexpr):
    # Output element i (row-major over the view's shape d0..d4) comes from the view's element at
    # the same coordinates: offset sum(c_k * s_k) into the input's storage.
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    rest = i
    c4 = rest % d4
    rest = rest // d4
    c3 = rest % d3
    rest = rest // d3
    c2 = rest % d2
    rest = rest // d2
    c1 = rest % d1
    c0 = rest // d1
    offset = c0 * s0 + c1 * s1 + c2 * s2 + c3 * s3 + c4 * s4
    tl.store(out_ptr + i, tl.load(src_ptr + offset, mask=mask), mask=mask)


def permute_copy(input: torch.Tensor, dims: list) -> torch.Tensor:
    view = input.permute(dims)  # strides only: nothing is copied here
    out = torch.empty(view.shape, dtype=view.dtype, device=view.device)
    n = view.numel()
    if n == 0:
        return out
    pad = _MAX_DIMS - view.dim()
    shape = [1] * pad + list(view.shape)
    strides = [0] * pad + list(view.stride())
    grid = (triton.cdiv(n, _BLOCK),)
    _gather_kernel[grid](view, out, n, shape[1], shape[2], shape[3], shape[4], *strides,
                         BLOCK=_BLOCK)
    return out
