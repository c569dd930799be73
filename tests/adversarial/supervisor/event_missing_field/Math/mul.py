# Attack: drop a field from the worker's own events (triton_launches of each case, which a
# lenient reader once took as 0). Expected: crash with a protocol error, never a default value.
import torch
import triton

import kbx_worker.proto as _proto


@triton.jit
def _unused(x_ptr):
    pass


_send = _proto.Channel.send


def _send_without(self, ev, **fields):
    if ev == "case":
        fields.pop("triton_launches", None)
    return _send(self, ev, **fields)


_proto.Channel.send = _send_without


def mul(input, other, out=None):
    return torch.mul(input, other, out=out)
