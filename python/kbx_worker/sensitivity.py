"""A floor under the judge's estimate of PyTorch's own error, for small results.

The shadow rule allows a candidate ten times PyTorch's error against the float64 shadow (and 4
ulps of the largest result). Where a result has few elements that error is a sample of one or a
few, and where the result is small against the terms it is computed from, it can be zero by luck:
Math/add's zero-dim x + 3*y with x near -3*y is exact in PyTorch's fused multiply-add and off by
the product's rounding in an honest kernel that multiplies, then adds (an error ratio of 98.9, one
seed in about a thousand). Two float64 measures bound what such a result may legitimately differ
by, and the judge takes the smaller:

- movement: how far the result moves when each floating input moves by about one rounding of the
  arithmetic it is computed in (SAMPLES random perturbations, the largest movement). Large where
  rounding anywhere on the way matters, but also at points where an honest kernel is exact (the
  distance of two identical inputs, cos near a multiple of pi, zeta near its pole): there the
  inputs themselves never move.
- terms: the result of the same call on the absolute values of the inputs (and of its floating
  scalars): for sums, products and their compositions the magnitude of the terms that rounding
  errors scale with (x + 3*y gives |x| + 3|y|; a sum, the sum of |x_i|). Large where terms
  cancel, but also where the call is not of that kind (exp of a negative number).

Both are large only where terms of a sum-like computation cancel and the result is sensitive to
their rounding: the case the floor is for. Only for small results (MAX_ELEMENTS): over many
elements PyTorch's worst error is a steady estimate and needs no floor.

Every call here runs on the CPU, in float64, whatever the case's device: a moved input leaves the
reference's domain (binary_cross_entropy's probability of exactly 1 becomes 1 + 6e-8), which the
CPU answers with an exception (no floor from that call) and CUDA with a device-side assert that
would end the reference worker's every later case. Hence also MAX_INPUT_ELEMENTS: a full-size
case's inputs are not copied to the CPU, and such a case keeps the allowance it had before."""

import json
import math

import torch

from .argcodec import encode_call, flatten_result, scalar_to_tensor
from .calls import upcast

MAX_ELEMENTS = 4096
MAX_INPUT_ELEMENTS = 1 << 22  # float64 copies of at most 32 MB on the CPU
SAMPLES = 4  # independent perturbations; the largest movement counts (one can cancel by chance)
# Relative size of a perturbation, per original input dtype: the unit roundoff of the arithmetic
# the contract asks for (half inputs are computed in float32). float64 inputs are not moved, and
# float64 results get no floor: their roundings are below what the float64 shadow resolves.
_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -24}


def _float_leaves(result):
    leaves = {}
    for name, value in flatten_result(result)[1]:
        t = value if isinstance(value, torch.Tensor) else scalar_to_tensor(value)
        if t is not None and t.is_floating_point():
            leaves[name] = t
    return leaves


def _judged(result, inputs, changed):
    """{name: numel} of the reference's results and updated inputs that get a floor: those of
    float32 and half dtypes (a float64 result is computed in float64, whatever its inputs)."""
    sizes = {name: t.numel() for name, t in _float_leaves(result).items() if t.dtype in _ROUNDOFF}
    sizes.update({k: inputs[k].numel() for k in changed if inputs[k].dtype in _ROUNDOFF})
    return sizes


def wanted(result, inputs, changed, call):
    """Whether the case's results (floating leaves and updated inputs) are small enough to need
    the floor, some input can move, the inputs are small enough to copy to the CPU, and the call
    (its encoding, argcodec) names no CUDA device that would take the floor's calls there."""
    count = sum(_judged(result, inputs, changed).values())
    movable = any(t.dtype in _ROUNDOFF and t.numel() for t in inputs.values())
    copied = sum(t.numel() for t in inputs.values())
    return movable and 0 < count <= MAX_ELEMENTS and copied <= MAX_INPUT_ELEMENTS \
        and "cuda" not in json.dumps(call)


def cpu_copy(value):
    """A deep copy of call arguments on the CPU, floating tensors in float64 (upcast's)."""
    if isinstance(value, torch.Tensor):
        return upcast(value.detach().cpu())
    if isinstance(value, tuple):
        return tuple(cpu_copy(v) for v in value)
    if isinstance(value, list):
        return [cpu_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: cpu_copy(v) for k, v in value.items()}
    return upcast(value)


def _moved(pristine, original_dtypes, seed):
    """A copy of the float64 arguments with each input of a float32 or half dtype scaled by
    1 + u*z (z normal, u its roundoff)."""
    args, kwargs = upcast(pristine)  # a deep copy
    _, tensors = encode_call(args, kwargs)
    for k, (name, t) in enumerate(sorted(tensors.items())):
        u = _ROUNDOFF.get(original_dtypes.get(name))
        if u is None or t.dtype != torch.float64 or t.numel() == 0:
            continue
        gen = torch.Generator(device=t.device)
        gen.manual_seed((seed * 1000003 + k) & ((1 << 63) - 1))
        z = torch.randn(t.shape, generator=gen, dtype=torch.float64, device=t.device)
        t.mul_(z.mul_(u).add_(1.0))
    return args, kwargs


def _absolute(value):
    """The call's arguments with every floating tensor and Python float made non-negative."""
    if isinstance(value, torch.Tensor):
        return value.abs() if value.is_floating_point() else value
    if isinstance(value, float):
        return abs(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_absolute(v) for v in value)
    if isinstance(value, dict):
        return {k: _absolute(v) for k, v in value.items()}
    return value


def _finite_pair(a, b):
    a64, b64 = a.detach().to(torch.float64), b.detach().to(torch.float64)
    finite = torch.isfinite(a64) & torch.isfinite(b64)
    zero = torch.zeros_like(b64)
    return torch.where(finite, a64, zero), torch.where(finite, b64, zero)


def _fold(into, name, key_inf, key_l2, values, base):
    """into[name][key_inf] = max |values| so far, into[name][key_l2] = max ||values|| / ||base||,
    over the elements where both are finite."""
    if values is None or values.shape != base.shape or base.numel() == 0:
        return
    v, b = _finite_pair(values, base)
    largest = float(v.abs().max())
    norm = float(b.norm())
    rel_l2 = float(v.norm()) / norm if norm > 0 else 0.0
    if not (math.isfinite(largest) and math.isfinite(rel_l2)):
        return
    got = into.setdefault(name, {"inf": 0.0, "l2": 0.0, "terms_inf": 0.0, "terms_l2": 0.0})
    got[key_inf] = max(got[key_inf], largest)
    got[key_l2] = max(got[key_l2], rel_l2)


def _call(fn, args, kwargs):
    result = fn(*args, **kwargs)
    return _float_leaves(result), encode_call(args, kwargs)[1]


def measure(fn, pristine, inputs, seed, result, changed):
    """The floor's measures of each small result leaf and updated input: ({leaf: entry},
    {input: entry}), entry = {"inf", "l2"} (movement: the largest |moved - base| and its L2 over
    the base's) and {"terms_inf", "terms_l2"} (terms: the largest |f(|args|)| and its L2 over the
    base's), the base being the float64 result on the CPU. `pristine`: cpu_copy of the
    arguments; `inputs` and `result` are the reference's (their dtypes say what moves and what
    gets a floor). A call that fails adds nothing (no floor: the stricter judgement)."""
    judged = _judged(result, inputs, changed)
    base_leaves, base_inputs = _call(fn, *upcast(pristine))
    base = {k: v for k, v in base_leaves.items() if k in judged}
    base_after = {k: base_inputs[k] for k in changed if k in base_inputs and k in judged}
    original_dtypes = {k: v.dtype for k, v in inputs.items()}
    results, updated = {}, {}

    def fold(leaves, after, key_inf, key_l2, minus_base):
        for into, got, bases in ((results, leaves, base), (updated, after, base_after)):
            for name, b in bases.items():
                values = got.get(name)
                if values is not None and minus_base:
                    values = values.detach().to(torch.float64) - b.detach().to(torch.float64)
                _fold(into, name, key_inf, key_l2, values, b)

    for k in range(SAMPLES):
        try:
            leaves, after = _call(fn, *_moved(pristine, original_dtypes, seed + k))
        except Exception:  # noqa: BLE001 - a perturbation the reference rejects
            continue
        fold(leaves, after, "inf", "l2", True)
    try:
        leaves, after = _call(fn, *_absolute(upcast(pristine)))
        fold(leaves, after, "terms_inf", "terms_l2", False)
    except Exception:  # noqa: BLE001 - the call rejects non-negative arguments: terms stay 0
        pass
    return results, updated
