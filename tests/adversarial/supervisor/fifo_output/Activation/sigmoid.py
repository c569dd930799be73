# Attack: put a FIFO where the supervisor reads the outputs (a blocking read would hang kbx).
# Expected: output_violation.
# the candidate runs in the worker's process, so it can wrap the function that writes outputs
import os
import sys

import torch
import triton
import triton.language as tl

import kbx_worker.calls as _calls

_write = _calls.write_kbt


@triton.jit
def _unused(x_ptr):
    pass


def _spoil(path, tensors):
    _write(path, tensors)
    if path.endswith(".cand.kbt"):
        os.remove(path)
        os.mkfifo(path)


_calls.write_kbt = _spoil


def sigmoid(input, out=None):
    return torch.sigmoid(input, out=out)
