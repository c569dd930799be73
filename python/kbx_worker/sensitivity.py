"""A floor under the judge's estimate of PyTorch's own error, for small results.

The shadow rule allows a candidate ten times PyTorch's error against the float64 shadow (and 4
ulps of the largest result). Where a result has few elements that error is a sample of one or a
few, and where the result is small against the terms it is computed from, it can be zero by luck:
Math/add's zero-dim x + 3*y with x near -3*y is exact in PyTorch's fused multiply-add and off by
the product's rounding in an honest kernel that multiplies, then adds (an error ratio of 98.9, one
seed in about a thousand). Two float64 measures, element by element, bound what such a result may
legitimately differ by, and each element's floor is the smaller (in the terms' case, ulp_floor
float32 ulps of it); the event carries the largest and their L2, the judge's two denominators:

- movement: how far the result moves when each floating input moves by about one rounding of the
  arithmetic it is computed in (SAMPLES random perturbations, the largest movement). Large where
  rounding anywhere on the way matters, but also at points where an honest kernel is exact (the
  distance of two identical inputs, cos near a multiple of pi, zeta near its pole): there the
  inputs themselves never move.
- terms: the result of the same call on the absolute values of the inputs (and of its floating
  scalars): for sums, products and their compositions the magnitude of the terms that rounding
  errors scale with (x + 3*y gives |x| + 3|y|; a sum, the sum of |x_i|). Large where terms
  cancel, but also where the call is not of that kind (exp of a negative number).

Both are large at one element only where terms of a sum-like computation cancel and the result
is sensitive to their rounding: the case the floor is for. Only for small results (MAX_ELEMENTS):
over many elements PyTorch's worst error is a steady estimate and needs no floor.

Every call here runs on the CPU, in float64, whatever the case's device: a moved input leaves the
reference's domain (binary_cross_entropy's probability of exactly 1 becomes 1 + 6e-8), which the
CPU answers with an exception (no floor from that call) and CUDA with a device-side assert that
would end the reference worker's every later case. Hence also MAX_INPUT_ELEMENTS: a full-size
case's inputs are not copied to the CPU, and such a case keeps the allowance it had before.

The floor's calls run on one CPU thread (one_cpu_thread): its tensors are small, and torch's CPU
pool made small float64 calls 100x slower (on this 2-core machine an isfinite of 33K elements took
22 ms on two threads against 0.06 ms on one; on the H200, beside 19 other workers on 16 CPUs,
the floor took 557 s of the 184 references' 1066 s in session 22, 3.4-9.5 s for a case of 33K
elements)."""

import contextlib
import json
import math

import torch

from .argcodec import encode_call, flatten_result, scalar_to_tensor
from .calls import upcast

MAX_ELEMENTS = 4096
# The tiers whose cases get the floor: not the full tier's nor its fresh twins, where the six
# float64 calls on one CPU thread cost most (52 s of the 184 references' time on the H200 in
# session 22, 12 s for one case of spectral_norm_eig's eig) and no case was seen to need it.
FLOOR_TIERS = ("edge", "small")
MAX_INPUT_ELEMENTS = 1 << 20  # float64 copies of at most 8 MB, six calls on one CPU thread
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


@contextlib.contextmanager
def one_cpu_thread():
    """torch's CPU calls on this thread's own, the pool's size put back after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def cpu_copy(value):
    """A deep copy of call arguments on the CPU, floating tensors in float64."""
    with one_cpu_thread():
        return upcast(value, "cpu")


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


def _call(fn, args, kwargs):
    result = fn(*args, **kwargs)
    return _float_leaves(result), encode_call(args, kwargs)[1]


def measure(fn, pristine, inputs, seed, result, changed, ulp_floor=4.0):
    """The floor of each small result leaf and updated input: ({leaf: entry}, {input: entry}),
    entry = {"inf": the largest floor of an element, "l2": the floors' L2 over the base's,
    "moved": the largest movement, "terms": the largest |f(|args|)|}. An element's floor is the
    smaller of its own movement (the largest over SAMPLES moved copies, from the base: the
    float64 result on the CPU) and ulp_floor float32 ulps of its own term, so that neither a
    large term elsewhere (exp of the negative of another element) nor a large movement elsewhere
    raises it. `pristine`: cpu_copy of the arguments; `inputs` and `result` are the reference's
    (their dtypes say what moves and what gets a floor). A call that fails adds nothing (no
    floor from it: the stricter judgement)."""
    with one_cpu_thread():
        return _measure(fn, pristine, inputs, seed, result, changed, ulp_floor)


def _measure(fn, pristine, inputs, seed, result, changed, ulp_floor):
    judged = _judged(result, inputs, changed)
    base_leaves, base_inputs = _call(fn, *upcast(pristine))
    # (group, name): the result's leaves and the updated inputs, read from a call's two returns
    raw = {("results", k): v for k, v in base_leaves.items() if k in judged}
    raw.update({("updated", k): base_inputs[k] for k in changed
                if k in base_inputs and k in judged})
    bases = {key: v.detach().to(torch.float64) for key, v in raw.items()}
    finite = {key: torch.isfinite(b) for key, b in bases.items()}  # no floor where it is not
    bases = {key: torch.where(finite[key], b, torch.zeros_like(b)) for key, b in bases.items()}
    moved = {key: torch.zeros_like(b) for key, b in bases.items()}
    terms = {key: torch.zeros_like(b) for key, b in bases.items()}
    original_dtypes = {k: v.dtype for k, v in inputs.items()}

    def fold(leaves, after, into, minus_base):
        """into[key] = max(into[key], |got - base|, or |got| for the terms), where finite."""
        for (group, name), b in bases.items():
            got = (leaves if group == "results" else after).get(name)
            if got is None or got.shape != b.shape:
                continue
            got = got.detach().to(torch.float64)
            change = (got - b).abs() if minus_base else got.abs()
            change = torch.where(finite[group, name] & torch.isfinite(change), change,
                                 torch.zeros_like(b))
            into[group, name] = torch.maximum(into[group, name], change)

    for k in range(SAMPLES):
        try:
            fold(*_call(fn, *_moved(pristine, original_dtypes, seed + k)), moved, True)
        except Exception:  # noqa: BLE001 - a perturbation the reference rejects
            continue
    try:
        fold(*_call(fn, *_absolute(upcast(pristine))), terms, False)
    except Exception:  # noqa: BLE001 - the call rejects non-negative arguments: no terms
        pass
    ulps = ulp_floor * 2.0 ** -23
    out = {"results": {}, "updated": {}}
    for (group, name), b in bases.items():
        if b.numel() == 0:
            continue
        floor = torch.minimum(moved[group, name], terms[group, name] * ulps)
        norm = float(b.norm())
        entry = {"inf": float(floor.max()), "l2": float(floor.norm()) / norm if norm > 0 else 0.0,
                 "moved": float(moved[group, name].max()),
                 "terms": float(terms[group, name].max())}
        if all(math.isfinite(v) for v in entry.values()):
            out[group][name] = entry
    return out["results"], out["updated"]
