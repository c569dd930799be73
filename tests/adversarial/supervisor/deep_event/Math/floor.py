# Attack: one protocol event nested a million levels deep, written on every pipe it holds (the
# worker's event pipe is one of them) when the module is imported; its kernel is the expert's,
# so that nothing else fails. nlohmann::json parses and frees any depth but copies a value by
# recursion: kbx died of a stack overflow (SIGSEGV) copying the event, the whole run with it.
# Expected: crash (protocol error: nested deeper than 256 levels), every other job unharmed.
import os as _os
import stat as _stat


def _write_deep_event():
    depth = 1_000_000
    line = ('{"ev":"case","case":"x","deep":' + "[" * depth + "]" * depth + "}\n").encode()
    for name in _os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if fd > 2 and _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                _os.write(fd, line)
        except (ValueError, OSError):
            pass


_write_deep_event()

# --- the expert kernel (solutions/expert/Math/floor.py) ---
import torch
import triton
import triton.language as tl

_BLOCK = 4096


@triton.jit
def _floor_block(x_ptr, y_ptr, IS_FLOAT: tl.constexpr, offs, mask):
    x = tl.load(x_ptr + offs, mask=mask)
    if IS_FLOAT:
        xf = x.to(tl.float32)  # exact for half inputs
        y = tl.floor(xf)
        # the GPU floor flushes subnormal inputs to zero; floor of a negative subnormal is -1
        bits = xf.to(tl.int32, bitcast=True)
        neg_subnormal = (bits < 0) & ((bits & 0x7F800000) == 0) & ((bits & 0x7FFFFF) != 0)
        y = tl.where(neg_subnormal, -1.0, y)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(y_ptr + offs, x, mask=mask)  # integers are their own floor


@triton.jit
def _floor_kernel(x_ptr, y_ptr, n, IS_FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if (pid + 1) * BLOCK <= n:  # a full block: no mask, so the loads and stores vectorize
        _floor_block(x_ptr, y_ptr, IS_FLOAT, offs, None)
    else:  # the last, partial block
        _floor_block(x_ptr, y_ptr, IS_FLOAT, offs, offs < n)


def floor(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input if input.is_contiguous() else input.contiguous()
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dst = out if out.is_contiguous() else torch.empty(x.shape, dtype=out.dtype, device=x.device)
    n = x.numel()
    if n:
        _floor_kernel[(triton.cdiv(n, _BLOCK),)](x, dst, n, IS_FLOAT=x.dtype.is_floating_point, BLOCK=_BLOCK,
                                                 num_warps=8)
    if dst is not out:
        out.copy_(dst)
    return out
