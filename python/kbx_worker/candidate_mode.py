"""Candidate mode: check the source statically, import it, run every case, time the full ones.

The verdict is not computed here: outputs and the inputs a call changed go to files,
and the supervisor compares them with the reference's, which another process produced.
"""

import os
import sys
import time
import traceback

import torch

from . import tensorio
from .argcodec import decode_call, encode_call
from .casegen import Ctx
from .calls import classify_exception, same_bits, save_result, set_tf32, sync
from .static import check_source
from .taskload import Reference, load_module
from .tensorio import read_kbt, write_kbt
from .timer import CudaTimer, tampered


class LaunchCounter:
    """Counts Triton kernel launches (compiled or interpreted) by wrapping their run methods."""

    def __init__(self):
        self.count = 0
        self._install()

    def _wrap(self, cls):
        original = cls.run
        counter = self

        def run(self, *args, **kwargs):
            if not kwargs.get("warmup", False):
                counter.count += 1
            return original(self, *args, **kwargs)

        cls.run = run

    def _install(self):
        try:
            from triton.runtime.jit import JITFunction
            self._wrap(JITFunction)
        except Exception:  # triton missing: no launches can be counted, the track rule says so
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction
            self._wrap(InterpretedFunction)
        except Exception:
            pass


class CaseInputs:
    """Each case's inputs on the device. They are rebuilt from the task's own case generator
    when the rebuilt tensors match the checksums the reference's worker took of the originals,
    which saves reading gigabytes of inputs; otherwise they are read from the reference's file.
    Either way they are the reference's inputs, bit for bit."""

    def __init__(self, request, device):
        self.device = device
        self.tf32 = bool(request.get("tf32", False))
        self.generators = {}
        if request.get("task_dir"):
            try:  # before the candidate is imported, from the task's files
                ref = Reference(request["task_dir"], request["entry"], label="inputs")
                self.generators = {c.name: c for c in ref.cases}
            except Exception:  # the file path below still works
                self.generators = {}

    def get(self, case):
        """(tensors, how): how is "rebuilt" or "file"."""
        spec = self.generators.get(case["name"]) or self.generators.get(case.get("fresh_of"))
        if spec is not None and case.get("digest") and "case_seed" in case:
            try:
                tensors = self._rebuild(spec, case["case_seed"])
                if tensorio.digest(tensors) == case["digest"]:
                    return tensors, "rebuilt"
            except Exception:
                pass
        return read_kbt(case["inputs"], self.device), "file"

    def _rebuild(self, spec, seed):
        saved = set_tf32(self.tf32)
        try:
            args, kwargs = spec.make(Ctx(seed, self.device))
            _, tensors = encode_call(list(args), kwargs)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
        return tensors


# Kinds of a failed call after which the worker goes on with the next case: the process and its
# CUDA context are still sound, and the other cases' verdicts feed the graded levels.
_GO_ON_AFTER = ("compile_error", "runtime_error")
_last_failure = {"kind": None}


def _fail(channel, phase, exc, case=None):
    _last_failure["kind"] = classify_exception(exc)
    channel.send("error", phase=phase, kind=classify_exception(exc), type=type(exc).__name__,
                 message=str(exc)[:4000], trace=traceback.format_exc()[-6000:], case=case)


def _read_source(path):
    with open(path, "rb") as f:
        raw = f.read()
    return raw.decode("utf-8")


def _judged_call(entry, case, tensors, args, kwargs, pristine, counter, device, channel, **facts):
    """One call whose result the supervisor judges: run it, save the outputs and the inputs it
    changed, report the case. False when it failed (the failure is reported)."""
    before = counter.count
    t_call = time.perf_counter()
    try:
        if case.get("random"):
            torch.manual_seed(case["torch_seeds"][0])
        result = entry(*args, **kwargs)
        sync(device)
    except Exception as exc:
        _fail(channel, "run", exc, case=case["name"])
        return False
    call_s = time.perf_counter() - t_call
    base = case["out_prefix"]
    t_save = time.perf_counter()
    # Only the inputs the call changed travel back; the supervisor takes a missing one as
    # unchanged and compares it with the reference's (updated or original) input. An output
    # that is one of them travels once.
    changed = {k: v for k, v in tensors.items() if not same_bits(pristine[k], v)}
    dedup = () if case.get("random") else list(changed)
    structure, meta = save_result(result, base + ".cand.kbt", tensors, device, updated=dedup)
    write_kbt(base + ".cand_after.kbt", changed)
    save_s = time.perf_counter() - t_save
    if case.get("random"):
        try:  # a second draw on the same inputs, with another seed, for the judge
            args2, kwargs2 = decode_call(case["call"], read_kbt(case["inputs"], device))
            torch.manual_seed(case["torch_seeds"][1])
            save_result(entry(*args2, **kwargs2), base + ".cand2.kbt", tensors, device)
            sync(device)
        except Exception as exc:
            _fail(channel, "run", exc, case=case["name"])
            return False
    channel.send("case", case=case["name"], structure=structure, outputs=meta,
                 triton_launches=counter.count - before, call_s=call_s, save_s=save_s, **facts)
    return True


def _load(tensors, values):
    for k, t in tensors.items():
        t.copy_(values[k])


def _time_case(entry, case, twin, args, kwargs, tensors, timer, inputs, counter, device, channel):
    """Times a full case. With a fresh twin, the timed calls alternate between the case's values
    and the twin's, written into the same tensors, and one more call on the twin's values is
    judged: a result cached across calls cannot pass it."""
    t_time = time.perf_counter()
    variants = None
    if twin is not None:
        original, _ = inputs.get(case)  # the values as generated: the call may have updated them
        fresh, fresh_from = inputs.get(twin)
        try:  # tensors that cannot take the values in place (expanded views): judge it apart
            _load(tensors, original)
            variants = (original, fresh)
        except (RuntimeError, KeyError):
            variants = None
    before_each = (lambda i: _load(tensors, variants[i % 2])) if variants else None
    try:
        ms = timer.run(lambda: entry(*args, **kwargs), before_each)
    except Exception as exc:
        _fail(channel, "time", exc, case=case["name"])
        return False
    channel.send("timing", case=case["name"], ms=ms, seconds=time.perf_counter() - t_time,
                 probe_ids=timer.last_ids if timer.probe.active else [], tampered=tampered(),
                 host_ms=timer.last_host_ms)
    if twin is None:
        return True
    if variants is None:
        args2, kwargs2 = decode_call(twin["call"], fresh)
        pristine = {k: v.detach().clone() for k, v in fresh.items()}
        return _judged_call(entry, twin, fresh, args2, kwargs2, pristine, counter, device, channel,
                            read_s=0.0, inputs_from=fresh_from)
    _load(tensors, variants[1])
    sync(device)
    return _judged_call(entry, twin, tensors, args, kwargs, variants[1], counter, device, channel,
                        read_s=0.0, inputs_from=fresh_from)


def run(request, channel):
    device = request["device"]
    entry_name = request["entry"]
    source = _read_source(request["candidate"])
    facts = check_source(source, entry_name)
    channel.send("static", **facts)
    if not facts["syntax_ok"] or not facts["entry_found"]:
        return 0
    # Under --track triton a source without @triton.jit is rejected statically; its cases still
    # run (untimed) so that the verdict can say how it would fare under --track any.
    static_reject = request.get("track") == "triton" and not facts["triton_kernels"]
    if torch.device(device).type == "cuda":
        # CUDA starts here, before the candidate's code runs: the timing probe (loaded by CUDA
        # at its start) is in place before anything the candidate does.
        torch.empty(1, device=device)
    inputs = CaseInputs(request, device)
    counter = LaunchCounter()
    sys.path.insert(0, os.path.dirname(os.path.abspath(request["candidate"])))
    t_import = time.perf_counter()
    try:
        module = load_module(request["candidate"], "kbx_candidate")
        entry = getattr(module, entry_name)
    except Exception as exc:
        phase = "compile" if classify_exception(exc) == "compile_error" else "import"
        _fail(channel, phase, exc)
        return 0
    channel.send("imported", seconds=time.perf_counter() - t_import)
    will_time = (bool(request.get("time")) and torch.device(device).type == "cuda"
                 and not static_reject)
    twins = {c["fresh_of"]: c for c in request["cases"] if c.get("fresh_of")} if will_time else {}
    timed = []
    for case in request["cases"]:
        if case.get("fresh_of") and will_time:
            continue  # runs right after its base case is timed
        t_read = time.perf_counter()
        tensors, inputs_from = inputs.get(case)
        read_s = time.perf_counter() - t_read
        args, kwargs = decode_call(case["call"], tensors)
        pristine = {k: v.detach().clone() for k, v in tensors.items()}
        if not _judged_call(entry, case, tensors, args, kwargs, pristine, counter, device, channel,
                            read_s=read_s, inputs_from=inputs_from):
            if _last_failure["kind"] in _GO_ON_AFTER:
                continue
            return 0
        if case["tier"] == "full":
            timed.append((case, args, kwargs, tensors))
    if will_time and timed:
        timer = CudaTimer(device, **request.get("timer", {}))
        for case, args, kwargs, tensors in timed:
            if not _time_case(entry, case, twins.get(case["name"]), args, kwargs, tensors, timer,
                              inputs, counter, device, channel):
                return 0
    return 0
