"""Candidate mode: check the source statically, import it, run every case, time the full ones.

The verdict is not computed here: outputs and the inputs a call changed go to files,
and the supervisor compares them with the reference's, which another process produced.
"""

import ctypes
import functools
import gc
import os
import random
import select
import sys
import threading
import time
import traceback

import torch

from . import tensorio
from .argcodec import decode_call
from .calls import (DECOYS, build_inputs, classify_exception, copies, decoy_values, load_values,
                    same_bits, save_result, set_tf32, sync, value_variants)
from .static import check_source
from .taskload import Reference, load_module
from .tensorio import DeferredFiles, read_kbt, write_kbt
from .timer import (CudaTimer, ProbeMarks, Reservoir, gpu_ooms, l2_guard, tampered,
                    variant_rounds)


class _AfterImport:
    """A meta-path finder that calls back right after a named module has been executed, the
    first time it is imported (or at once when it is imported already). It lets the worker wrap
    a class of a heavy module (Inductor's runtime) only in candidates that import it, instead of
    importing it in every worker. One instance per process; a module's callbacks are dropped
    once they ran."""

    _instance = None

    def __init__(self):
        self.pending = {}  # module name -> callbacks, each given the executed module
        self._busy = threading.local()

    @classmethod
    def when_imported(cls, name, callback):
        module = sys.modules.get(name)
        if module is not None:
            try:
                callback(module)
            except Exception:  # counting must never break the candidate's run
                pass
            return
        if cls._instance is None:
            cls._instance = cls()
        hook = cls._instance
        hook.pending.setdefault(name, []).append(callback)
        if hook not in sys.meta_path:
            sys.meta_path.insert(0, hook)

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.pending or getattr(self._busy, "on", False):
            return None
        self._busy.on = True  # the finders below this one find the module's real spec
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.on = False
        loader = getattr(spec, "loader", None)
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # a built-in or namespace package: nothing to wrap (not the modules hooked)
        original = loader.exec_module

        def exec_module(module):
            original(module)  # a failed execution raises here: the callbacks wait for a retry
            try:
                del loader.exec_module  # this loader instance is this module's alone
            except AttributeError:
                pass
            for callback in self.pending.pop(fullname, []):
                try:
                    callback(module)
                except Exception:  # counting must never break the candidate's import
                    pass
            if not self.pending and self in sys.meta_path:
                sys.meta_path.remove(self)

        loader.exec_module = exec_module
        return spec


# Inductor (torch.compile's default backend) launches the Triton kernels it generates through
# this class's run method (`kernel.run(*args, stream=...)` in its generated wrapper code), never
# through JITFunction.run: torch 2.x, torch/_inductor/runtime/triton_heuristics.py.
INDUCTOR_MODULE = "torch._inductor.runtime.triton_heuristics"
INDUCTOR_AUTOTUNER = "CachingAutotuner"


class LaunchCounter:
    """Counts Triton kernel launches (compiled or interpreted) by wrapping their run methods, the
    launches through a compiled kernel's handle (`kernel.warmup(...)` once, then
    `compiled[grid](...)`: an honest way to skip the JIT's dispatch on every call), and those of
    torch.compile's Inductor (its CachingAutotuner's run, wrapped when the candidate imports
    Inductor's runtime: the worker does not import it itself)."""

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

    def _wrap_handle(self, cls):
        original = cls.__getitem__
        counter = self

        def getitem(self, grid):
            runner = original(self, grid)

            def counted(*args, **kwargs):
                counter.count += 1
                return runner(*args, **kwargs)

            return counted

        cls.__getitem__ = getitem

    def _wrap_autotuner(self, cls):
        """One launch per call of an Inductor kernel's run, unless the call's own launch was
        counted already by another wrapper (under the Triton interpreter Inductor launches
        through `fn[grid](...)`, a JITFunction's run; a subclass's run that calls its base's)."""
        original = cls.__dict__["run"]
        counter = self

        @functools.wraps(original)
        def run(self, *args, **kwargs):
            before = counter.count
            result = original(self, *args, **kwargs)
            if counter.count == before:
                counter.count += 1
            return result

        run.kbx_counted = True
        cls.run = run

    def _wrap_inductor(self, module):
        """Wraps the run of Inductor's autotuner class and of its subclasses in the module that
        define their own (DebugAutotuner)."""
        base = getattr(module, INDUCTOR_AUTOTUNER, None)
        if not isinstance(base, type) or "run" not in base.__dict__:
            return
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, base) and "run" in value.__dict__:
                self._wrap_autotuner(value)

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
        try:
            from triton.compiler.compiler import CompiledKernel
            self._wrap_handle(CompiledKernel)
        except Exception:
            pass
        _AfterImport.when_imported(INDUCTOR_MODULE, self._wrap_inductor)


class InputsUnavailable(RuntimeError):
    """A case's inputs could be neither rebuilt as the reference's nor read from a file."""


class InputsOutOfMemory(torch.cuda.OutOfMemoryError):
    """A case's inputs could not be rebuilt for want of the GPU's memory (classified as oom: the
    supervisor runs a job that ran beside others again alone before such a verdict stands)."""


# Pauses between tries of a case's inputs that ran out of the GPU's memory (None: the last try).
REBUILD_OOM_PAUSES_S = (0.2, 1.0, 3.0, None)


def _no_inputs_error(name, failure):
    """The error for a case whose inputs were not rebuilt and which has no inputs file (the
    reference keeps none for full-size cases its generator gives back bit for bit)."""
    if failure is not None and classify_exception(failure) == "oom":
        return InputsOutOfMemory(
            f"case {name}: out of memory on the GPU while its inputs were built from the task's "
            f"generator (tried {len(REBUILD_OOM_PAUSES_S)} times): {failure}"[:2000])
    if failure is not None:
        return InputsUnavailable(
            f"case {name}: the task's generator failed when its inputs were built after the "
            f"candidate was imported ({type(failure).__name__}: {failure}), and no inputs file "
            "is kept for full-size cases"[:2000])
    # The reference's generator gave these values twice in its own process, so here something
    # the candidate changed (torch's defaults, a patched function) makes them come out otherwise.
    return InputsUnavailable(
        f"case {name}: its inputs came out different from the reference's when rebuilt from the "
        "task's generator after the candidate was imported (did it change a process-wide torch "
        "setting, such as the default dtype, or patch a torch function?), and no inputs file is "
        "kept for full-size cases")


class CaseInputs:
    """Each case's inputs on the device. They are rebuilt from the task's own case generator
    when the rebuilt tensors match the checksums the reference's worker took of the originals,
    which saves reading gigabytes of inputs; otherwise they are read from the reference's file.
    Either way they are the reference's inputs, bit for bit."""

    def __init__(self, request, device):
        self.device = device
        self.tf32 = bool(request.get("tf32", False))
        self.generators = {}
        self.ready = {}  # case name -> prefetched (tensors, how), taken once by get()
        self.ready_decoys = {}  # twin name -> its prefetched decoys, taken once by decoys()
        if request.get("task_dir"):
            try:  # before the candidate is imported, from the task's files
                ref = Reference(request["task_dir"], request["entry"], label="inputs")
                self.generators = {c.name: c for c in ref.cases}
            except Exception:  # the file path below still works
                self.generators = {}

    def get(self, case, patient=True):
        """(tensors, how): how is "rebuilt" or "file"; a case's prefetched inputs once. patient:
        out of the GPU's memory with no file to read, wait and try again (not when prefetching)."""
        ready = self.ready.pop(case["name"], None)
        if ready is not None:
            return ready
        spec = self.generators.get(case["name"]) or self.generators.get(case.get("fresh_of"))
        failure = None
        if spec is not None and case.get("digest") is not None and "case_seed" in case:
            tensors, failure = self._rebuild_checked(
                spec, case, patient=patient and not case.get("inputs"))
            if tensors is not None:
                return tensors, "rebuilt"
        if not case.get("inputs"):
            raise _no_inputs_error(case["name"], failure)
        return read_kbt(case["inputs"], self.device), "file"

    def _rebuild_checked(self, spec, case, patient):
        """(tensors, None) when the generator gives the reference's inputs again, else (None, the
        exception or None for different values). Out of the GPU's memory (other jobs' memory, or
        the worker's own cached blocks) and `patient` (no file to read instead), it frees its
        cache and tries again a few times."""
        failure = None
        for pause_s in REBUILD_OOM_PAUSES_S if patient else (None,):
            try:
                tensors = self._rebuild(spec, case["case_seed"])
                if tensorio.digest(tensors) == case["digest"]:
                    return tensors, None
                return None, None
            except Exception as exc:  # noqa: BLE001 - kept for the error's message
                # without its frames, whose locals (the generator's tensors) would keep the
                # memory that the next try needs
                failure = exc.with_traceback(None)
                tensors = None
                if classify_exception(exc) != "oom" or pause_s is None:
                    return None, failure
                torch.cuda.empty_cache()
                time.sleep(pause_s)
        return None, failure

    def prefetch(self, cases, max_bytes, decoys_of=()):
        """Builds the inputs of `cases` ahead, in order, while they take at most max_bytes in
        all: the full-size cases' inputs before the worker takes the GPU's timing slot, so that
        the slot's time goes to the calls (session 18 on the H200: 23 s of the 186 s the slot
        was held in a run of the 184 references went to rebuilding inputs under it). Building
        inputs is the task's own generator (or a read of the reference's file), GPU work as a
        small case's is; out of memory, nothing is kept and the inputs are built when asked.
        decoys_of: twins whose decoys are built too, after every case's inputs (session 18:
        outside their batches, the timed cases held the slot 48 s, building decoys part of it)."""
        total = 0
        if not _gpu_has_room(self.device, PREFETCH_FREE_FACTOR * max_bytes):
            return total
        try:
            for case in cases:
                if case["name"] in self.ready:
                    continue
                built = self.get(case, patient=False)  # ahead of need: no waiting for memory
                size = tensorio.named_bytes(built[0])
                if total + size > max_bytes:
                    return total
                self.ready[case["name"]] = built
                total += size
            # then the decoys of the twins in decoys_of (as many bytes again; built under the
            # slot until session 19), in the order the timed loops want them
            for twin in decoys_of:
                if twin["name"] in self.ready_decoys:
                    continue
                decoys = self.decoys(twin, DECOYS)
                size = sum(tensorio.named_bytes(d) for d in decoys)
                if len(decoys) < DECOYS or total + size > max_bytes:
                    return total  # short of some (memory?): all built again under the slot
                self.ready_decoys[twin["name"]] = decoys
                total += size
        except Exception:  # noqa: BLE001 - memory above all; get() raises it again if it recurs
            self.ready.clear()
            self.ready_decoys.clear()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        return total

    def decoys(self, twin, count):
        """More values of a twin's shapes from the task's generator (seeds derived from the
        twin's run-time seed), timed but not judged: a cache keyed on input values needs an entry
        for each. Fewer (none) when the generator cannot rebuild them; prefetched ones once."""
        ready = self.ready_decoys.pop(twin["name"], None)
        if ready is not None:
            return ready
        spec = self.generators.get(twin.get("fresh_of", ""))
        if spec is None or "case_seed" not in twin:
            return []
        return decoy_values(lambda seed: self._rebuild(spec, seed), twin["case_seed"], count)

    def _rebuild(self, spec, seed):
        return build_inputs(spec.make, seed, self.device, self.tf32)


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


def _report_oom_or_raise(exc, channel, case=None, phase="save"):
    """Reports exc as the case's error (phase "save" unless told) when it is a lack of memory,
    else raises it. kbx's own work after a call (comparing its inputs with their copies, copying
    and writing its outputs) allocates while other jobs and the references share the GPU: an
    out-of-memory there is the kbx run's (the supervisor runs the job again alone), not a crash
    of the candidate (session 33's compile workload: a worker died of it, exit 1)."""
    if classify_exception(exc) != "oom":
        raise exc
    _fail(channel, phase, exc, case=case)


def _save_call(case, result, tensors, pristine, device, channel, held, dedup=True):
    """Writes a judged call's outputs and the inputs it changed (`pristine`: their copies from
    before it) to the case's files; returns (structure, metadata), or None when that ran out of
    memory (reported). Only the changed inputs travel back; the supervisor takes a missing one
    as unchanged. With dedup, an output that is one of them travels once."""
    base = case["out_prefix"]
    try:
        changed = {k: v for k, v in tensors.items() if not same_bits(pristine[k], v)}
        # Without `held`, save_result's own writer (calls.write_kbt), as before the slot's
        # hand-back: tests/adversarial/supervisor/fifo_output reaches the supervisor through it.
        saved = save_result(result, base + ".cand.kbt", tensors, device,
                            held.write if held else True, updated=list(changed) if dedup else ())
        (held.write if held else write_kbt)(base + ".cand_after.kbt", changed)
        return saved
    except Exception as exc:  # noqa: BLE001 - only an out-of-memory is kept, the rest raised
        _report_oom_or_raise(exc, channel, case["name"])
        return None


def _judged_call(entry, case, tensors, args, kwargs, pristine, counter, device, channel,
                 held=None, slot=None, **facts):
    """One call whose result the supervisor judges: run it, save the outputs and the inputs it
    changed, report the case. False when it failed (the failure is reported). held: a
    HeldReports that keeps the files and the report until the timing slot is handed back (not
    for a random case, whose second draw reads its inputs again). slot: a SlotWait armed for
    this call (the slot is taken at its first GPU work, else right after it)."""
    if case.get("random"):
        held = None
    before = counter.count
    if case.get("random"):
        torch.manual_seed(case["torch_seeds"][0])
    armed = slot.arm() if slot is not None else False
    t_call = time.perf_counter()
    try:
        result = entry(*args, **kwargs)
        sync(device)
    except Exception as exc:
        if armed:
            slot.disarm()
        _fail(channel, "run", exc, case=case["name"])
        return False
    call_s = time.perf_counter() - t_call
    if armed:
        slot.disarm()
        slot.take()  # a call without GPU work: its outputs' copies and the rest hold it
    base = case["out_prefix"]
    t_save = time.perf_counter()
    saved = _save_call(case, result, tensors, pristine, device, channel, held,
                       dedup=not case.get("random"))
    if saved is None:
        return False
    structure, meta = saved
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
    (held or channel).send("case", case=case["name"], structure=structure, outputs=meta,
                           triton_launches=counter.count - before, call_s=call_s, save_s=save_s,
                           **facts)
    return True


class HeldReports:
    """The full-size cases' outputs and reports while the job holds the GPU's timing slot: the
    outputs are copied on the GPU and written, then reported, once the slot is handed back
    (writing them was a quarter of the candidates' slot time on the H200). A report goes only
    after its files are whole: the supervisor reads them as soon as it comes."""

    def __init__(self, channel):
        self.channel = channel
        self.files = DeferredFiles()
        self.files.defer = True
        self.reports = []

    def write(self, path, named):
        self.files.write(path, named)

    def send(self, ev, **fields):
        self.reports.append((ev, fields))

    def release(self):
        reports, self.reports = self.reports, []
        try:
            self.files.flush()
        except Exception as exc:  # noqa: BLE001 - only an out-of-memory is kept, the rest raised
            # the held reports go with it: their files are not whole
            _report_oom_or_raise(exc, self.channel)
            return
        for ev, fields in reports:
            self.channel.send(ev, **fields)


# The full cases' untouched inputs kept for their timed loops, at most (the slot holder's copies).
KEEP_ORIGINALS_BYTES = 4 << 30


def _snapshot(result, tensors):
    """Copies of a timed call's result and of the tensors it ran on, taken right after the call
    (outside its timed span), before the next call's values overwrite them. A result leaf that
    is one of the inputs (an out= argument) stays that same copy, so saving it later still
    finds it to be the updated input."""
    copies = {id(t): c for t, c in ((t, t.detach().clone()) for t in tensors.values())}
    named = {k: copies[id(t)] for k, t in tensors.items()}

    def copy(v):
        if isinstance(v, torch.Tensor):
            if id(v) not in copies:
                copies[id(v)] = v.detach().clone()
            return copies[id(v)]
        if isinstance(v, tuple):
            return tuple(copy(x) for x in v)
        if isinstance(v, list):
            return [copy(x) for x in v]
        return v

    return copy(result), named


# The most bytes of full-size inputs a worker builds before it takes the GPU's timing slot (the
# jobs waiting for the slot hold them in GPU memory meanwhile: at most this much each), and only
# while the GPU has PREFETCH_FREE_FACTOR times that free: memory the other jobs' full-size cases
# need is never taken (an honest kernel's out-of-memory would be a false verdict).
PREFETCH_BYTES = 2 << 30
PREFETCH_FREE_FACTOR = 8


def _gpu_has_room(device, free_bytes):
    """Whether `device` (a CUDA one; any other always has room) has free_bytes free now."""
    if torch.device(device).type != "cuda":
        return True
    try:
        return torch.cuda.mem_get_info(torch.device(device))[0] >= free_bytes
    except Exception:  # noqa: BLE001 - unknown: no room
        return False


FULL_TIERS = ("full", "fresh")  # the full-size cases' tiers: their work holds the timing slot


def _slot_cases(cases, twins):
    """The cases whose inputs the worker will want under the slot, in the order it wants them:
    the full-size cases, each timed one followed by its fresh twin."""
    out = []
    for case in cases:
        if case["tier"] in FULL_TIERS and not (case.get("fresh_of") and twins):
            out.append(case)
            if case["name"] in twins:
                out.append(twins[case["name"]])
    return out


def _twins_with_decoys(cases, twins):
    """The twins whose values are written into their timed case's own call (same call but for
    the tensors), with decoys beside them, in the order they are timed."""
    return [twins[c["name"]] for c in cases
            if c["name"] in twins and twins[c["name"]].get("call") == c.get("call")]


class LaunchSlotProbe:
    """The CUPTI probe's request for the GPU's timing slot at this process's next GPU work (a
    launch, copy or fill: `--slot-at launch`), made on the worker's own pipes. Inert (arms
    nothing) without the probe, or with one that lacks it. Here, not in timer.py: the reference
    worker never uses it (sched::worker_sources_hash leaves candidate-only modules out)."""

    def __init__(self):
        self.lib = ProbeMarks().lib  # the probe's library when it records, else None
        try:
            if self.lib is not None:
                self.lib.kbx_probe_slot_arm.argtypes = [ctypes.c_int, ctypes.c_int]
                self.lib.kbx_probe_slot_arm.restype = ctypes.c_int
                self.lib.kbx_probe_slot_disarm.restype = ctypes.c_int
        except AttributeError:  # a probe from before session 27
            self.lib = None

    def slot_arm(self, request_fd, event_fd):
        """True when armed; False when inert (the caller asks for the slot itself)."""
        return self.lib is not None and bool(self.lib.kbx_probe_slot_arm(request_fd, event_fd))

    def slot_disarm(self):
        """Ends the armed span; True when the slot was asked for and granted inside it."""
        return self.lib is not None and bool(self.lib.kbx_probe_slot_disarm())


def _slot_pipes(channel):
    """The request and event descriptors of the worker's proto.Channel, its event lines flushed:
    the probe writes "slot_wanted" and reads "go" on them as Channel.wait_for_slot does."""
    own = getattr(channel, "slot_fds", None)  # a test's stand-in says its own
    if own is not None:
        return own()
    channel._out.flush()
    return channel._in.fileno(), channel._out.fileno()


def _slot_answer(channel, wait):
    """Reads the supervisor's "go" after a "slot_wanted" (--slot-at early): True once read;
    False when not there yet and not `wait`. Exits when the pipe closed or said anything else,
    as proto.Channel.wait_for_slot does. Here, not in proto.py: the reference worker never asks
    early (sched::worker_sources_hash)."""
    own = getattr(channel, "slot_answer", None)  # a test's stand-in answers itself
    if own is not None:
        return own(wait)
    if not wait:
        ready = select.poll()  # not select(): the channel's descriptors sit above 1000
        ready.register(channel._in.fileno(), select.POLLIN)
        if not ready.poll(0):
            return False
    if channel._in.readline().strip() != "go":
        raise SystemExit(3)
    return True


def _join_quiet_host(channel):
    """Tells the supervisor that CUDA starts next (then the candidate's code runs): from here on
    every other job's timed loop freezes this one (sandbox::Spawn::cpu_only_until_cuda); before,
    the worker ran kbx's code only, CPU work, frozen only for a host-bound call. Waits for its
    "ok" (a job frozen at once reads it when thawed); exits when the supervisor closes the pipe
    instead. Here, not in proto.py: the reference worker never says it
    (sched::worker_sources_hash)."""
    own = getattr(channel, "join_quiet_host", None)  # a test's stand-in answers itself
    if own is not None:
        own()
        return
    channel.send("cuda_next")
    if channel._in.readline().strip() != "ok":
        raise SystemExit(3)


class SlotWait:
    """The GPU's timing slot (issue 14), asked for once, before the first full-size case: the
    edge and small cases run beside other jobs, the full-size ones and the timed loops alone.
    Handed back once, when the timed loops are over (the supervisor never grants it again);
    under `--slot-at launch` also for a while between two full-size calls (hand_back(again)).
    With `probe` (`--slot-at launch`), a full-size call whose inputs are built asks for it at its
    first GPU work instead (the probe's launch callback): what it compiles first (a
    torch.compile graph for new shapes, a Triton kernel's new specialization) runs beside the
    other jobs, what it launches (an autotuner's trials too) holds the slot as before. With
    `early` (`--slot-at early`) it is asked for during the edge and small cases and taken
    between them (_run_cases)."""

    def __init__(self, channel, wanted, probe=None, early=False):
        self.channel, self.wanted, self.held = channel, wanted, False
        self.probe = probe if wanted else None
        self.prefetched = False
        self.armed = False
        # --slot-at early: asked for during the edge and small cases (ask()), taken between them
        # when it came (granted()) or before the first full-size case (take())
        self.early = early
        self.asked = False

    @property
    def at_launch(self):
        return self.probe is not None

    def take(self):
        if self.wanted and not self.held:
            if self.asked:
                _slot_answer(self.channel, wait=True)  # asked already: its "go"
            else:
                self.channel.wait_for_slot()
            self.held = True

    def ask(self):
        """Asks for the slot without waiting for it (--slot-at early)."""
        if self.wanted and not self.held and not self.asked:
            self.channel.send("slot_wanted")
            self.asked = True

    def granted(self):
        """Whether the slot asked for is this job's now (its "go" read, not waited for)."""
        if self.asked and not self.held and _slot_answer(self.channel, wait=False):
            self.held = True
        return self.held

    def arm(self):
        """Before a full-size call (its inputs built): the probe asks for the slot at the call's
        first GPU work. True when armed; else the slot is taken now."""
        if self.held or not self.wanted:
            return False
        if self.probe is not None and self.probe.slot_arm(*_slot_pipes(self.channel)):
            self.armed = True
            return True
        self.take()
        return False

    def disarm(self):
        """After the armed call: held when the probe took the slot inside it. take() follows
        for a call that did no GPU work (a failed one may not: its job may end)."""
        if self.armed:
            self.armed = False
            if self.probe.slot_disarm():
                self.held = True

    def hand_back(self, again=False):
        """The slot back once the job's GPU work is done. again (--slot-at launch, between two
        full-size calls): for a while, so that what the next call compiles before its first GPU
        work runs beside the other jobs; the next call asks for it again."""
        self.disarm()
        if self.held:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
            if again:
                self.channel.send("slot_done", again=True)
            else:
                self.channel.send("slot_done")
            self.held = False


def _time_case(entry, case, twin, args, kwargs, tensors, timer, inputs, counter, device, channel,
               held=None, seed=0, original=None):
    """Times a full case on fresh values for every call: before each timed call (outside its
    timed span) the timer writes one of several value variants into the case's tensors: the
    case's own, its fresh twin's (from the reference worker, with reference outputs) and
    decoys from the task's generator, in rounds of a random order chosen at run time. One of
    the timed calls on the twin's values, picked at random among them, is copied out right
    after it ran and judged like any case: a result that does not follow its inputs fails it.
    The timing event names the variant of every call (`variants`; the twin is 1). original: the
    case's values as generated (a copy taken before its judged call), else made again here."""
    t_time = time.perf_counter()
    variants = None
    # A twin whose call differs in a value that is not a tensor (a scalar drawn from the seed, as
    # logspace's bounds are) cannot be given by writing its tensors into this call: it is judged
    # on its own call after timing.
    if twin is not None and twin.get("call") == case.get("call"):
        if original is None:  # the values as generated: the call may have updated them
            original, _ = inputs.get(case)
        fresh, fresh_from = inputs.get(twin)
        # None: the twin's values cannot be written into this call; it is judged apart
        variants = value_variants(tensors, original, fresh, lambda: inputs.decoys(twin, DECOYS))
    rng = random.Random(seed)
    order = variant_rounds(rng, len(variants)) if variants else None
    pick = Reservoir(rng)
    schedule, launches_before, judged = [], {}, {}

    def before_each(i):
        v = next(order)
        schedule.append(v)
        load_values(tensors, variants[v])
        launches_before[i] = counter.count

    def after_each(i, result):
        if schedule[i] == 1 and pick.offer():
            judged["result"], judged["tensors"] = _snapshot(result, tensors)
            judged["launches"] = counter.count - launches_before[i]
            judged["call"] = i
        launches_before.pop(i, None)

    setup_s = time.perf_counter() - t_time  # the variants and decoys, before the timer
    try:
        ms = timer.run(lambda: entry(*args, **kwargs), before_each if variants else None,
                       after_each if variants else None)
    except Exception as exc:
        _fail(channel, "time", exc, case=case["name"])
        return False
    l2 = getattr(timer, "l2", None)
    channel.send("timing", case=case["name"], ms=ms, seconds=time.perf_counter() - t_time,
                 probe_ids=timer.last_ids if timer.probe.active else [],
                 tampered=tampered() + (list(l2.found) if l2 is not None else []),
                 host_ms=timer.last_host_ms, variants=schedule if variants else [],
                 judged_variant=1 if variants else None,
                 quiet=bool(getattr(timer, "last_quiet", False)),
                 settle_s=float(getattr(timer, "last_settle_s", 0.0)),
                 settle_skipped=bool(getattr(timer, "last_settle_skipped", False)),
                 quiet_wait_s=float(getattr(timer, "last_quiet_wait_s", 0.0)),
                 host_loop_ms=getattr(timer, "last_host_loop_ms", None),
                 contended=bool(getattr(timer, "last_contended", False)),
                 gpu_ooms=gpu_ooms(device),
                 batches=int(getattr(timer, "last_batches", 0)),
                 short_holds=int(getattr(timer, "last_short_holds", 0)),
                 **_timing_phases(timer, setup_s))
    if twin is None:
        return True
    if variants is None or "result" not in judged:
        fresh, fresh_from = inputs.get(twin)
        args2, kwargs2 = decode_call(twin["call"], fresh)
        pristine = {k: v.detach().clone() for k, v in fresh.items()}
        return _judged_call(entry, twin, fresh, args2, kwargs2, pristine, counter, device, channel,
                            held, read_s=0.0, inputs_from=fresh_from)
    return _report_judged(twin, judged, fresh, device, channel, held, inputs_from=fresh_from)


def _timing_phases(timer, setup_s):
    """Where a case's timing went, for KBX_DEBUG_TIMING's timelines (bench/slot_profile.py): the
    variants' setup, the timer's warm-up estimate, its batches (the timed calls, their scrubs,
    value loads and holds), of those the GPU holds at the batches' heads (their spins' length)
    and its probe flushes, in seconds. Not read by the verdict."""
    phases = getattr(timer, "last_phases", None) or {}
    out = {"setup_s": setup_s}
    for name in ("estimate", "batches", "holds", "flush"):
        if isinstance(phases.get(name), float):
            out[name + "_s"] = phases[name]
    return out


def _report_judged(twin, judged, pristine, device, channel, held=None, **facts):
    """Saves and reports a timed call's copied result, as _judged_call does for a call of its
    own."""
    sync(device)
    t_save = time.perf_counter()
    saved = _save_call(twin, judged["result"], judged["tensors"], pristine, device, channel, held)
    if saved is None:
        return False
    structure, meta = saved
    (held or channel).send("case", case=twin["name"], structure=structure, outputs=meta,
                           triton_launches=judged["launches"], call_s=0.0,
                           save_s=time.perf_counter() - t_save, read_s=0.0,
                           timed_call=judged["call"], **facts)
    return True


def run(request, channel):
    """Runs a candidate job. The objects that exist when it starts (the warm parent's: torch's,
    triton's, the worker's, about 235 thousand) are kept out of the garbage collector's sight
    meanwhile: a full collection in a forked worker went through all of them (110 ms each on the
    CPU machine, every page it touched copied from the parent; an allocating loop of 300
    thousand dicts took 487 ms, 183 ms frozen; ten torch.compile candidates on the CPU, 7% less
    CPU). Here, not in the warm parent or __main__: the reference worker's code and its eager
    timings stay as they were (sched::worker_sources_hash leaves this module out). Freezing and
    unfreezing move lists, touching no object; unfrozen at the end, so that a worker that exits
    through the interpreter's shutdown (a cold start, a test) finalizes them as before."""
    gc.freeze()
    try:
        return _run(request, channel)
    finally:
        gc.unfreeze()


def _run(request, channel):
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
    join_at = request.get("quiet_join") if request.get("gpu_slot") else None
    if join_at == "cuda":
        _join_quiet_host(channel)
    if torch.device(device).type == "cuda":
        # CUDA starts here, before the candidate's code runs: the timing probe (loaded by CUDA
        # at its start) is in place before anything the candidate does.
        t_cuda = time.perf_counter()
        try:
            torch.empty(1, device=device)
        except Exception as exc:  # noqa: BLE001 - only the GPU's memory is reported here
            if classify_exception(exc) != "oom":
                raise
            # its CUDA context found no room: the jobs and references beside it hold the GPU's
            # memory, so the job's oom is run again alone (not a crash, which would stand)
            _fail(channel, "cuda", exc)
            return 0
        l2_guard()  # persisting L2 off from here on: a later setting is the candidate's
        # its own line in KBX_DEBUG_TIMING's timeline (bench/job_timelines.py): CUDA's start
        # apart from the candidate's import
        channel.send("cuda_started", seconds=time.perf_counter() - t_cuda)
    inputs = CaseInputs(request, device)
    # The candidate runs under the task's TF32 rule, as the reference does: PyTorch allows TF32
    # in cuDNN by default, which would put a float32 convolution called from a candidate outside
    # a contract that forbids TF32 (the candidate may still change the switches itself).
    set_tf32(inputs.tf32)
    counter = LaunchCounter()
    if join_at == "context":  # an experiment: CUDA's start left running through GPU-only hushes
        _join_quiet_host(channel)
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
    # --slot-at launch: the probe asks at a full-size call's first GPU work (an inert probe, on
    # the CPU or without CUPTI, arms nothing: the slot is taken before the call).
    at_launch = request.get("slot_at") == "launch"
    slot = SlotWait(channel, bool(request.get("gpu_slot")), LaunchSlotProbe() if at_launch else None,
                    early=request.get("slot_at") == "early")
    held = HeldReports(channel) if slot.wanted else None
    try:
        try:
            _run_cases(request, entry, inputs, counter, device, channel, will_time, slot, held)
        finally:  # the slot back, then the held files written and reported, whatever happened
            slot.hand_back()
            if held is not None:
                held.release()
    except Exception as exc:  # noqa: BLE001 - only an out-of-memory is kept, the rest raised
        # The candidate's own calls report their errors where they run; what reaches here is
        # kbx's own work on the GPU (the timer's buffers, a case's copies), whose out-of-memory
        # beside other jobs is the run's (run again alone), not a crash of the candidate.
        _report_oom_or_raise(exc, channel, phase="harness")
    return 0


# --slot-at early: the slot is asked for after this many edge and small cases (the candidate
# imported, its first kernels compiled), and taken between the later ones.
EARLY_ASK_AFTER = 1


def _run_cases(request, entry, inputs, counter, device, channel, will_time, slot, held):
    """The cases in order, then the full ones' timed loops; the full-size work holds the slot
    (its files and reports wait in `held`). With --slot-at early the slot is asked for after
    EARLY_ASK_AFTER edge and small cases and taken between the later ones: those left when it
    came run after its hand-back."""
    twins = {c["fresh_of"]: c for c in request["cases"] if c.get("fresh_of")} if will_time else {}
    timed = []
    kept_bytes = 0

    def prefetch():
        if slot.wanted and not slot.held and not slot.prefetched:
            inputs.prefetch(_slot_cases(request["cases"], twins), PREFETCH_BYTES,
                            _twins_with_decoys(request["cases"], twins))
            slot.prefetched = True

    def run_one(case, full_call_next=False):
        """Runs one case; False when the job ends here. full_call_next: another full-size call
        follows (under --slot-at launch the slot goes back between the two)."""
        nonlocal kept_bytes
        full_size = case["tier"] in FULL_TIERS
        arm = None
        if full_size:
            prefetch()
            # At its first GPU work when its inputs are built; else now (they are built under it,
            # as the prefetch's memory bound wants).
            if slot.at_launch and not slot.held and case["name"] in inputs.ready:
                arm = slot
            else:
                slot.take()
        t_read = time.perf_counter()
        try:
            tensors, inputs_from = inputs.get(case)
        except (InputsUnavailable, InputsOutOfMemory) as exc:
            _fail(channel, "inputs", exc, case=case["name"])
            # oom: its verdict (the job runs again alone where others ran beside)
            return not isinstance(exc, InputsOutOfMemory)
        read_s = time.perf_counter() - t_read
        args, kwargs = decode_call(case["call"], tensors)
        try:
            pristine = copies(tensors)
        except Exception as exc:  # noqa: BLE001 - only an out-of-memory is kept, the rest raised
            # session 34 on the H100: the copies ran out of memory beside the other jobs, and the
            # worker's traceback read as the candidate's crash (Normalization/batch_norm)
            _report_oom_or_raise(exc, channel, case["name"], phase="inputs")
            return False
        if not _judged_call(entry, case, tensors, args, kwargs, pristine, counter, device, channel,
                            held if full_size else None, slot=arm, read_s=read_s,
                            inputs_from=inputs_from):
            return _last_failure["kind"] in _GO_ON_AFTER
        if full_size and full_call_next and slot.at_launch and slot.held:
            # session 29 on the H200: a torch.compile candidate recompiled for each full-size
            # case's new shapes and dtypes while it held the slot (the compile workload's slot
            # was busy 93% of the run, its timed loops a fifth of that)
            slot.hand_back(again=True)
        if case["tier"] == "full":
            # its untouched values too (the timer loads them again), while they are small beside
            # the GPU's memory; else the timer makes them again
            size = tensorio.named_bytes(pristine)
            keep = kept_bytes + size <= KEEP_ORIGINALS_BYTES
            kept_bytes += size if keep else 0
            timed.append((case, args, kwargs, tensors, pristine if keep else None))
        return True

    # a fresh twin runs right after its base case is timed
    cases = [c for c in request["cases"] if not (c.get("fresh_of") and will_time)]
    later = []
    if slot.early and slot.wanted and any(c["tier"] in FULL_TIERS for c in cases):
        small = [c for c in cases if c["tier"] not in FULL_TIERS]
        ran = 0
        for case in small:
            if ran >= EARLY_ASK_AFTER and not slot.asked:
                prefetch()  # the full-size inputs built before the slot, as at the call
                slot.ask()
            if slot.granted():
                break
            if not run_one(case):
                return
            ran += 1
        later = small[ran:]
        cases = [c for c in cases if c["tier"] in FULL_TIERS]
    last_full = max((k for k, c in enumerate(cases) if c["tier"] in FULL_TIERS), default=-1)
    for k, case in enumerate(cases):
        if not run_one(case, full_call_next=k < last_full):
            return
    if will_time and timed:
        slot.take()
        timer = CudaTimer(device, **request.get("timer", {}))
        if slot.wanted:
            timer.quiet = channel  # host-bound calls are timed with the other jobs frozen
            # one hush for the job's timed cases in a row: one settle, not one per case (session
            # 33 on the H200: 12.4 s of the slot's 166 s were settles, 4 a job); KBX_KEEP_QUIET=0
            # (passed on by kbx) ends it after each case
            timer.keep_quiet = os.environ.get("KBX_KEEP_QUIET", "1") != "0"
        try:
            for case, args, kwargs, tensors, pristine in timed:
                try:
                    timed_ok = _time_case(
                        entry, case, twins.get(case["name"]), args, kwargs, tensors, timer,
                        inputs, counter, device, channel, held,
                        seed=int(request.get("timing_seed", 0)) ^ case.get("case_seed", 0),
                        original=pristine)
                except (InputsUnavailable, InputsOutOfMemory) as exc:  # the twin's (or own)
                    _fail(channel, "inputs", exc, case=case["name"])
                    timed_ok = False
                if not timed_ok:
                    return
        finally:
            timer.end_quiet()
    if later:
        # --slot-at early: the slot came before these; they run after its hand-back (the full
        # cases' files written and reported first), beside the other jobs as before it
        slot.hand_back()
        if held is not None:
            held.release()
        for case in later:
            if not run_one(case):
                return
