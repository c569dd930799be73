# Attack on lean inputs: torch.randn patched at import to raise the GPU's out-of-memory error, so
# that the task's generator fails in this process for the full-size case, which has no inputs
# file. An out-of-memory beside other jobs is run again alone instead of standing as a verdict;
# the attack must not turn that into a harness fault (left out of the results) or a pass: alone,
# it is oom again, and that verdict stands.
import torch


def _no_memory(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB")


torch.randn = _no_memory


def scale(x, factor):
    return x * factor
