# Attack: leave the outputs file shorter than its header says (a mapped read would die of
# SIGBUS). Expected: output_violation.
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
        os.truncate(path, max(0, os.path.getsize(path) - 4))


_calls.write_kbt = _spoil


def tanh(input_tensor, out_tensor=None):
    return torch.tanh(input_tensor, out=out_tensor)
