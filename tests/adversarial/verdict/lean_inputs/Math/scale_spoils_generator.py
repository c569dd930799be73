# Attack on lean inputs: torch.randn patched at import, so that the task's generator, run again
# in this process, builds other (zero) inputs for the full-size case; its checksums do not match
# the reference's and no file is kept to fall back on.
import torch

_randn = torch.randn
torch.randn = lambda *a, **k: _randn(*a, **k) * 0


def scale(x, factor):
    return x * factor
