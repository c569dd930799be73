# Adversarial candidate "gpu_memory_hog" (written by hand; run by tests/python/test_gpu_memory_hog.py
# on the GPU machine only: on the CPU there is no shared GPU memory to take).
# Attack: at its first call it takes all of the GPU's free memory but 1 GiB and keeps it while it
# sleeps HOLD_S, so that the references and jobs of the other tasks of the run (another method's
# candidates, in a shared run) meet an out-of-memory error: a reference_error or oom for them would
# be this candidate's doing. Its own answers are right.
# Expected: itself passed (holding memory is no wrong answer), every other task as without it
# (kbx computes a reference that ran out of GPU memory beside other work again alone, and runs a
# job that did again alone).
import time

import torch

HOLD_S = 20.0
_HELD = []


def _take_the_gpu():
    if _HELD or not torch.cuda.is_available():
        return
    free, _ = torch.cuda.mem_get_info()
    chunk = 1 << 30
    while free > 2 * chunk:
        try:
            _HELD.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            break
        free -= chunk
    time.sleep(HOLD_S)


def relu(input, inplace=False):
    _take_the_gpu()
    if inplace:
        return input.clamp_(min=0)
    return torch.relu(input)
