"""Attack on the random contract's judge: a dropout that never drops (the contract fails), whose
second draw's outputs file is rewritten to declare a tensor of 2**40 elements with no data.

The judge reads both draws; allocating that tensor would fail with an out-of-memory, which kbx
takes as its own fault (a harness_error, not a verdict) rather than the candidate's broken
contract. Expected: random_contract (the second draw's header differs from the first's, and
no reader allocates more than a file holds).
"""
import struct

import torch
import torch.nn.functional as F

import kbx_worker.candidate_mode as _worker
from kbx_worker import tensorio

_save_result = _worker.save_result


def _forge(path):
    """The file at path again, each tensor declared 2**40 elements long, no data."""
    tensors = tensorio.read_kbt(path)
    with open(path, "wb") as f:
        f.write(tensorio.MAGIC + struct.pack("<I", len(tensors)))
        for name, t in tensors.items():
            nb, dn = name.encode(), tensorio.dtype_name(t.dtype).encode()
            f.write(struct.pack("<H", len(nb)) + nb + struct.pack("<H", len(dn)) + dn)
            f.write(struct.pack("<B", 1) + struct.pack("<q", 1 << 40))
            f.write(struct.pack("<Q", (1 << 40) * t.element_size()))


def _saving(result, path, *args, **kwargs):
    saved = _save_result(result, path, *args, **kwargs)
    if str(path).endswith(".cand2.kbt"):
        _forge(path)
    return saved


_worker.save_result = _saving


def fused_hardshrink_dropout(input: torch.Tensor, p: float = 0.5, training: bool = True,
                             inplace: bool = False, lambd: float = 0.5) -> torch.Tensor:
    # never drops anything between p = 0 and p = 1 (right at both ends)
    if training and not 0 < p < 1:
        input = F.dropout(input, p=p, training=training, inplace=inplace)
    return F.hardshrink(input, lambd)
