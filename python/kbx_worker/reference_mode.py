"""Reference mode: build each case's inputs, run the reference and its float64 shadow, save all.

Output files per case, in the job's out_dir, named <case>.<role>.kbt (the inputs in in_dir, the
only folder a candidate sees):
  in          the inputs, exactly as handed to every candidate
  ref         the reference's result at the task's dtypes
  ref_after   the inputs after the reference call (for tasks that update tensors in place)
  shadow      the reference's result on float64 copies of the inputs (when the task allows)
  shadow_after the float64 inputs after the shadow call
A small result's event also carries its sensitivity (sensitivity.py): how far the shadow moves
when the inputs move by a rounding, and the shadow of their absolute values, the two measures of
the floor under the judge's error allowance.
"""

import os
import random
import statistics
import sys
import time
import traceback

import torch

from .argcodec import encode_call, flatten_result
from .calls import (DECOYS, build_inputs, copies, decoy_values, load_values, narrow_shadow,
                    same_bits, save_result, set_tf32, shadow_minus_ref, sync, upcast,
                    value_variants)
from .casegen import Ctx, case_seed
from . import sensitivity, tensorio
from .taskload import Reference
from . import timer as timer_module
from .timer import CudaTimer, variant_rounds


FRESH_SUFFIX = "__fresh"
# The eager redraw (kbx puts "eager_redraw" in each job; on by default since session 41,
# KBX_EAGER_REDRAW=0 turns it off): a full case whose eager call takes at most EAGER_REDRAW_MAX_MS
# is timed a second time, on inputs made again after the caching allocator gave its kept segments
# back (torch.cuda.empty_cache: new segments, as a fresh candidate worker's), and the second timing
# replaces the first when the first was more than EAGER_REDRAW_APART slower. Identical memory-bound calls run in one of two states, about 15%
# apart, by where their buffers lie; the reference worker, whose buffers are cut from segments
# kept from its shadows and other cases, drew the slow one 16 times as often as a fresh candidate
# worker (sessions 37-40 on an H100, bench/two_states.py): a speedup about 15% too high on such
# a case, cached for every later method. Two draws that agree keep the first: no bias toward the
# faster of two alike timings. Session 41's cold run of the 184 references (H100): 2 of 507 cases
# apart by more than 8% between a reference and itself as its candidate, against 7-12 without.
EAGER_REDRAW_MAX_MS = 2.0
EAGER_REDRAW_APART = 0.08


class FreshTwin:
    """A full case again with values from another seed. The candidate's worker writes these
    values (among others) into the very tensors it times, before some of the timed calls, and
    one of those calls is judged against this twin's reference: a result cached across calls
    then comes back stale and fails this twin's comparison."""

    def __init__(self, case):
        self.name = case.name + FRESH_SUFFIX
        self.tier = "fresh"
        self.make = case.make
        self.dist = case.dist
        self.random = False
        self.fresh_of = case.name


def fresh_twins(cases):
    """A twin for every full, deterministic case (random ones are judged by their statistics,
    which a twin's single draw cannot do)."""
    return [FreshTwin(c) for c in cases if c.tier == "full" and not getattr(c, "random", False)]


class CaughtOoms:
    """The failed GPU allocations this worker caught itself where no library can keep a plan
    for want of room (the lean inputs' rebuild: the inputs' generators only), which do not make
    the process starved (_refuse_starved)."""

    def __init__(self):
        self.count = 0

    def rebuild(self, device, attempt):
        """attempt() with the failures it caused counted here; returns its result."""
        before = timer_module.gpu_ooms(device)
        try:
            return attempt()
        finally:
            self.count += timer_module.gpu_ooms(device) - before


def _run_case(ref, job, case, device, files=None, caught=None):
    """Runs one case's reference (and its float64 shadow) and saves its files; returns the case's
    event, unsent: a full case's eager timing is added to it later, under the timing slot.
    caught: where the failed allocations of the lean inputs' rebuild are counted (CaughtOoms)."""
    t0 = time.perf_counter()
    phases = {}  # seconds per step, for KBX_DEBUG_TIMING
    last_mark = [t0]

    def lap(name):
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + now - last_mark[0]
        last_mark[0] = now

    seed = case_seed(job["seed"], job["task"], case.name)
    ctx = Ctx(seed, device)
    args, kwargs = case.make(ctx)
    args = list(args)
    call, tensors = encode_call(args, kwargs)
    sync(device)
    lap("make")
    base = os.path.join(job["out_dir"], case.name)
    in_base = os.path.join(job.get("in_dir") or job["out_dir"], case.name)
    save = ("full" if case.tier == "fresh" else case.tier) in job.get("save_tiers", job["tiers"])

    files = files or tensorio.DeferredFiles()

    def write_kbt(path, named):  # a case of an unsaved tier runs, but nothing reads its files
        if save:
            files.write(path, named)

    write_kbt(in_base + ".in.kbt", tensors)  # the one file candidates may read
    inputs_digest = tensorio.digest(tensors)
    lap("save_in")
    shadow_args = upcast((args, kwargs)) if job.get("shadow", True) else None
    before = {k: v.detach().clone() for k, v in tensors.items()}
    result = ref.entry(*args, **kwargs)
    sync(device)
    lap("call")
    changed = [k for k, v in tensors.items() if not same_bits(before[k], v)]
    del before
    random = bool(getattr(case, "random", False))
    dedup = () if random else changed  # random cases' outputs go whole to the task's judge
    structure, meta = save_result(result, base + ".ref.kbt", tensors, device,
                                  save and files.write, dedup)
    write_kbt(base + ".ref_after.kbt", {k: tensors[k] for k in changed})
    lap("save_ref")
    # No inputs file where the generator gives them back (a call of scalars only, as logspace's,
    # keeps its empty file); one already on disk (the deferred writes were full) stays.
    lean = save and job.get("lean_inputs") and files.defer and tensors and not changed \
        and not random
    caught = caught or CaughtOoms()
    in_file = not (lean and caught.rebuild(
        device, lambda: _inputs_rebuild(case, seed, device, inputs_digest, job))
                   and files.discard(in_base + ".in.kbt"))
    if lean:
        lap("lean")
    ev = {"task": job["task"], "label": job.get("label", ""), "case": case.name,
          "tier": case.tier, "dist": case.dist, "case_seed": seed, "call": call,
          "structure": structure, "outputs": meta, "shadow": False, "updated": changed,
          "random": random, "saved": save, "in_file": save and in_file, "digest": inputs_digest,
          "special": ctx.used_special,
          "inputs": {k: {"dtype": tensorio.dtype_name(v.dtype), "shape": list(v.shape)}
                     for k, v in tensors.items()}}
    if getattr(case, "fresh_of", None):
        ev["fresh_of"] = case.fresh_of
    if shadow_args is not None:
        sargs, skwargs = shadow_args
        fn = ref.shadow or ref.entry
        # Special values set their own scale (fi.max moved by a rounding is huge): no floor there;
        # nor for full-size cases and their twins (sensitivity.FLOOR_TIERS).
        floor = not random and not ctx.used_special and case.tier in sensitivity.FLOOR_TIERS \
            and sensitivity.wanted(result, tensors, changed, call)
        pristine = _copy_or_error(shadow_args, ev) if floor else None  # the shadow updates its own
        sresult = fn(*sargs, **skwargs)
        sync(device)
        _, stensors = encode_call(sargs, skwargs)
        if pristine is not None:
            try:
                ev["sensitivity"], ev["sensitivity_after"] = sensitivity.measure(
                    fn, pristine, tensors, seed, result, changed, job.get("ulp_floor", 4.0))
            except Exception as exc:  # noqa: BLE001 - the base call fails: judged without it
                _no_floor(ev, exc)
            del pristine
            lap("sensitivity")
        # Half the bytes of a float64 shadow: float32 for float16 and bfloat16 results
        # (narrow_shadow), float32 differences from float32 ones (shadow_minus_ref)
        refs = {k: v for k, v in flatten_result(result)[1] if isinstance(v, torch.Tensor)}
        after, after_minus_ref = _compact_shadow(
            {k: stensors[k] for k in changed if k in stensors},
            {k: tensors[k] for k in changed}) if save else ({}, [])
        minus_ref = []

        def write_shadow(path, named):
            compact, names = _compact_shadow(named, refs)
            minus_ref.extend(names)
            files.write(path, compact)

        _, smeta = save_result(sresult, base + ".shadow.kbt", stensors, device,
                               save and write_shadow, [k for k in dedup if k in stensors])
        write_kbt(base + ".shadow_after.kbt", after)
        # a leaf stored once as an updated input (same_as) is a difference where that input is
        minus_ref += [m["name"] for m in smeta if m.get("same_as") in after_minus_ref]
        ev["shadow_minus_ref"] = sorted(minus_ref)
        ev["shadow_after_minus_ref"] = sorted(after_minus_ref)
        ev["shadow"] = True
        lap("shadow")
    if case.tier == "full" and ref.cost is not None:
        ev["cost"] = ref.cost(*args, **kwargs)
    ev["seconds"] = time.perf_counter() - t0
    ev["phases"] = {k: round(v, 4) for k, v in phases.items()}
    return ev


def _no_floor(ev, exc):
    """Records why a small result has no sensitivity (the judge then allows only PyTorch's own
    error and the ulp floor: stricter, never looser)."""
    ev["sensitivity_error"] = f"{type(exc).__name__}: {exc}"[:300]
    print(f"kbx reference: {ev['task']} {ev['case']}: judged without the small-result floor "
          f"({ev['sensitivity_error']})", file=sys.stderr, flush=True)


def _copy_or_error(shadow_args, ev):
    """A float64 copy of the shadow's arguments on the CPU for the sensitivity, or None (recorded
    in the event) when there is no room for it."""
    try:
        return sensitivity.cpu_copy(shadow_args)
    except Exception as exc:  # noqa: BLE001 - out of the host's memory
        _no_floor(ev, exc)
        return None


def _inputs_rebuild(case, seed, device, inputs_digest, job):
    """Whether the case's generator, run again from its seed, gives the same inputs bit for bit
    (by their checksums): then a candidate's worker builds them itself and the reference keeps
    no inputs file for the case (lean_inputs: the full-size inputs were 47% of the references'
    bytes on the H200, the room the run lacked). Out of memory or any failure: False."""
    try:  # built as a candidate's worker will build them
        return tensorio.digest(build_inputs(case.make, seed, device,
                                            job.get("tf32", False))) == inputs_digest
    except Exception:  # noqa: BLE001 - the file is kept; nothing is lost but room
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return False


def _compact_shadow(named, refs):
    """The shadow tensors as written (narrow_shadow, then shadow_minus_ref) and the names stored
    as differences from the reference."""
    return shadow_minus_ref(narrow_shadow(named, {k: v.dtype for k, v in refs.items()}), refs)


def _variant_loads(job, case, ev, twin_ev, args, kwargs, device):
    """before_each for a full case's baseline timing: the value variants a candidate's timed
    calls of the case get (candidate_mode._time_case), the case's own, its fresh twin's and
    DECOYS more from the generator (seeds from the twin's), in rounds of a random order. Both
    sides of a speedup then time the same work where a call's speed follows its values (a gather
    whose locality follows its indices or transforms) and where it updates its inputs (each call
    starts from them, as a candidate's does, not from the last call's output). None where a
    candidate's calls get no variants either (no twin, the twin's call differs in a scalar,
    values that cannot be written in place)."""
    if twin_ev is None or twin_ev.get("call") != ev.get("call"):
        return None
    _, tensors = encode_call(args, kwargs)
    tf32 = job.get("tf32", False)

    def rebuild(seed):
        return build_inputs(case.make, seed, device, tf32)

    try:  # out of memory for the copies: the baseline on the case's own values, as before
        original = copies(tensors)
        fresh = rebuild(twin_ev["case_seed"])
    except (RuntimeError, KeyError):
        return None
    variants = value_variants(tensors, original, fresh,
                              lambda: decoy_values(rebuild, twin_ev["case_seed"], DECOYS))
    if variants is None:
        return None
    order = variant_rounds(random.Random(ev["case_seed"]), len(variants))
    return lambda i: load_values(tensors, variants[next(order)])


def _remade(job, case, ev, twin_ev, device):
    """A full case's inputs made again from its seed (the same values), and the loads of the value
    variants a candidate's timed calls get (_variant_loads) into them."""
    args, kwargs = case.make(Ctx(ev["case_seed"], device))
    args = list(args)
    return args, kwargs, _variant_loads(job, case, ev, twin_ev, args, kwargs, device)


def _time_case(ref, job, case, ev, device, timer, slot_wait_s=0.0, twin_ev=None):
    """Adds a full case's eager timing (and the torch.compile baseline's) to its event, on inputs
    made again from the case's seed (the same values), and the value variants a candidate's
    timed calls get (_variant_loads): the call runs alone on the GPU here, so the rest of the
    case (its files, its float64 shadow) ran before, outside the slot. With job["eager_redraw"]
    a short call may be timed twice (EAGER_REDRAW_MAX_MS)."""
    t0 = time.perf_counter()
    args, kwargs, before_each = _remade(job, case, ev, twin_ev, device)
    sync(device)
    phases = ev["phases"]
    phases["slot_wait"] = round(slot_wait_s, 4)
    phases["remake"] = round(time.perf_counter() - t0, 4)
    t_eager = time.perf_counter()
    _time_eager(ref, case, ev, timer, args, kwargs, before_each)
    if job.get("eager_redraw"):
        redrawn = _redraw_eager(ref, job, case, ev, device, timer, twin_ev)
        if redrawn is not None:
            args, kwargs, before_each = redrawn
    phases["variants"] = 0.0 if before_each is None else 1.0  # timed on the value variants
    phases["eager"] = round(time.perf_counter() - t_eager, 4)
    if job.get("compile_baseline"):
        t_compiled = time.perf_counter()
        ev.update(_time_compiled(ref, job, args, kwargs, device, timer, before_each))
        if "compile_ms" in ev:
            _refuse_contended(timer, case, "torch.compile")
        phases["compiled"] = round(time.perf_counter() - t_compiled, 4)
    ev["seconds"] += time.perf_counter() - t0


def _time_eager(ref, case, ev, timer, args, kwargs, before_each):
    """One eager timing of the case into its event: the samples, the probe's ids, the timer's
    steps and the launch record (a timing that met another process's work raises)."""
    ev["eager_ms"] = timer.run(lambda: ref.entry(*args, **kwargs), before_each)
    _refuse_contended(timer, case, "eager")
    ev["probe_ids"] = timer.last_ids if timer.probe.active else []
    phases = ev["phases"]
    for step, value in getattr(timer, "last_phases", {}).items():  # parts of "eager"
        phases["eager_" + step] = round(value, 4)
    phases.update(_launch_record(timer))


def redraw_keeps_second(first_ms, second_ms, apart=EAGER_REDRAW_APART):
    """Whether a second eager timing replaces the first: only when the first's median is more than
    `apart` slower (two alike timings keep the first)."""
    return statistics.median(first_ms) > statistics.median(second_ms) * (1 + apart)


def _redraw_eager(ref, job, case, ev, device, timer, twin_ev):
    """KBX_EAGER_REDRAW (EAGER_REDRAW_MAX_MS's note): times a short case again on inputs made
    after the allocator's kept segments went back, and keeps that timing when the first was more
    than EAGER_REDRAW_APART slower. Returns the inputs of the timing kept when it is the second
    (the torch.compile baseline is timed on them), else None. The phases say both medians."""
    first_ms, first_ids, first_phases = ev["eager_ms"], ev["probe_ids"], dict(ev["phases"])
    first_median = statistics.median(first_ms)
    if first_median > EAGER_REDRAW_MAX_MS:
        return None
    if str(device).startswith("cuda"):
        torch.cuda.empty_cache()
    args, kwargs, before_each = _remade(job, case, ev, twin_ev, device)
    sync(device)
    _time_eager(ref, case, ev, timer, args, kwargs, before_each)
    second_median = statistics.median(ev["eager_ms"])
    keep_second = redraw_keeps_second(first_ms, ev["eager_ms"])
    if not keep_second:  # the first stands, with its own ids, steps and launch record
        ev["eager_ms"], ev["probe_ids"] = first_ms, first_ids
        ev["phases"].clear()  # in place: the caller holds this dict
        ev["phases"].update(first_phases)
    ev["phases"]["eager_first_ms"] = round(first_median, 5)
    ev["phases"]["eager_redraw_ms"] = round(second_median, 5)
    ev["phases"]["eager_redrawn"] = 1.0 if keep_second else 0.0
    return (args, kwargs, before_each) if keep_second else None


def _launch_record(timer):
    """What kbx needs to tell whether the eager calls waited for their own launches (the
    supervisor's eager_launch_gaps): the median host time of one call's launch (ms), the timed
    batches, and how many of them took longer to queue than their GPU hold lasted."""
    host_ms = getattr(timer, "last_host_ms", [])
    if not host_ms:
        return {}
    return {"eager_launch_ms": round(statistics.median(host_ms), 5),
            "eager_batch_count": int(getattr(timer, "last_batches", 0)),
            "eager_short_holds": int(getattr(timer, "last_short_holds", 0))}


class GpuContended(RuntimeError):
    """A baseline's timed calls shared the GPU with another process's work that did not drain
    (kbx computes the task's references again alone, after the rest of the run)."""


def _refuse_contended(timer, case, which):
    """Raises GpuContended when the timer's last run began with another context's work still on
    the GPU (CudaTimer.settle gave up): the baseline would be slowed by it, every candidate's
    speedup on the task raised."""
    if getattr(timer, "last_contended", False):
        raise GpuContended(
            f"another process's work shared the GPU while case {case.name}'s {which} baseline "
            f"was timed (it did not drain in {timer_module.SETTLE_MAX_S:g} s)")


class GpuStarved(RuntimeError):
    """The worker's process ran out of the GPU's memory before a baseline's timing ended, beside
    other work (kbx computes the task's references again alone, after the rest of the run)."""


def _refuse_starved(job, case, ev, device, caught=None):
    """Raises GpuStarved when this process has had a GPU allocation fail (timer.gpu_ooms), caught
    or not, by the end of a case's timings, unless the job runs alone: a library may have kept a
    slower plan for want of workspace (cuDNN's convolution: 1.35x on an eager baseline in
    session 41), which would raise every candidate's speedup on the task and stay in the eager
    cache. Alone the timing stands; the count goes in the case's phases either way. caught: the
    failures this worker caught itself where no plan is kept (CaughtOoms), left out."""
    ooms = timer_module.gpu_ooms(device) - (caught.count if caught else 0)
    if not ooms:
        return
    ev["phases"]["gpu_ooms"] = float(ooms)
    if not job.get("alone"):
        raise GpuStarved(
            f"this worker's process found no room on the GPU for {ooms} allocation(s) by the end "
            f"of case {case.name}'s timings, beside other work: a library (cuDNN's convolution) "
            "may have kept a slower plan that needs less workspace, so its baselines are taken "
            "again alone")


def _time_compiled(ref, job, args, kwargs, device, timer, before_each=None):
    """The torch.compile baseline of a full case, timed like eager (on the same value variants):
    compiled once per task, its first call (compilation) not timed. A failure to compile is
    reported, not raised."""
    try:
        if getattr(ref, "compiled", None) is None:
            ref.compiled = torch.compile(ref.entry, backend=job.get("compile_backend", "inductor"))
        ref.compiled(*args, **kwargs)
        sync(device)
        ms = timer.run(lambda: ref.compiled(*args, **kwargs), before_each)
        return {"compile_ms": ms, "compile_probe_ids": timer.last_ids if timer.probe.active else []}
    except Exception as exc:  # the baseline is missing for this case; the run goes on
        return {"compile_error": f"{type(exc).__name__}: {exc}"[:1000]}


def prewarm_compiled(ref, job, cases, device):
    """Compiles the torch.compile baseline for the given full cases before the task takes the
    GPU's timing slot: Inductor's compile is seconds to a minute of CPU per task, which the slot
    would otherwise hold while the GPU idles. The cases run in the order the slot will run them
    (the same recompilations), then Dynamo forgets them: under the slot the same sequence compiles
    again from Inductor's on-disk caches, so the graphs timed are those of an unwarmed run.
    Returns the seconds spent; a failure (memory included) leaves the compile to the slot."""
    t0 = time.perf_counter()
    try:  # torch.compile itself can refuse (a Python that Dynamo does not support, say)
        compiled = torch.compile(ref.entry, backend=job.get("compile_backend", "inductor"))
        for case in cases:
            args, kwargs = case.make(Ctx(case_seed(job["seed"], job["task"], case.name), device))
            compiled(*args, **kwargs)
            del args, kwargs
        sync(device)
    except Exception:  # noqa: BLE001 - the timed path reports it, under the slot
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    finally:
        torch._dynamo.reset()
    return time.perf_counter() - t0


class _SlotSpan:
    """The GPU's timing slot for part of a task: asked for at the first take(), handed back
    (after the GPU is idle) when the block ends. Inert when the supervisor hands out none."""

    def __init__(self, channel, wanted):
        self.channel, self.wanted, self.held = channel, bool(wanted), False

    def take(self):
        """Returns the seconds spent waiting for the slot (0 when held already)."""
        if self.wanted and not self.held:
            t0 = time.perf_counter()
            self.channel.wait_for_slot()
            self.held = True
            return time.perf_counter() - t0
        return 0.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.held:
            sync_all()
            self.channel.send("slot_done")
            self.held = False
        return False


def release_gpu_cache(device):
    """Gives the caching allocator's unused segments back to the driver after a task (on a GPU):
    the next task of the chunk takes new ones, and until then the other jobs on the GPU have the
    room (session 41 on an H100: reference workers held 72.5 of 81 GB at a run's peak, one of them
    58 GB, while neighbours ran out of memory)."""
    if timer_module.cuda_in_use(device):
        try:
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001 - a broken context: the next task reports it
            print(f"kbx reference: could not give the GPU's cached memory back ({exc})",
                  file=sys.stderr, flush=True)


def sync_all():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def run(request, channel, timer=None):
    """timer: the eager timer (tests pass a stand-in); by default a CudaTimer when the request
    asks for timing on a GPU."""
    device = request["device"]
    if timer is None and request.get("time") and torch.device(device).type == "cuda":
        timer = CudaTimer(device, **request.get("timer", {}))
    if timer is not None and request.get("gpu_slot"):
        timer.quiet = channel  # eager loops are timed with the other jobs frozen (as configured)
    caught = CaughtOoms()  # for the whole process: a kept plan outlives its task
    if timer is not None:
        # and only once no other process's work is left on the GPU (its queue drained): the
        # baselines are shared by every method and run (timer_module's SETTLE_BURST).
        # KBX_BASELINE_SETTLE=0 (passed on by kbx) turns it off.
        timer.settles = os.environ.get("KBX_BASELINE_SETTLE", "1") != "0"
        timer.settle_min_ms = 0.0  # baselines are cached and shared: every one settles
    jobs = request["jobs"]
    while jobs:
        for job in jobs:
            _run_job(job, request, channel, timer, device, caught)
        # a worker kept across chunks (request["more"]) asks for its lane's next one
        jobs = channel.more_jobs() if request.get("more") else None


def _run_job(job, request, channel, timer, device, caught):
    """One task's references: its cases, their files, its eager timing; then task_done (or
    task_error, the next task still runs)."""
    t0 = time.perf_counter()
    try:
        os.makedirs(job["out_dir"], exist_ok=True)
        os.makedirs(job.get("in_dir") or job["out_dir"], exist_ok=True)
        # PyTorch's own error, which scales the tolerance, follows the task's TF32 rule
        set_tf32(job.get("tf32", False))
        ref = Reference(job["task_dir"], job["entry"], label=str(abs(hash(job["task"]))))
        tiers = set(job["tiers"])
        ran = [c for c in ref.cases if c.tier in tiers]
        twins = fresh_twins(ran) if job.get("fresh_twin") else []
        # Eager timing off for this job: its samples are cached (the supervisor adds them).
        timing = timer is not None and job.get("time_eager", True)
        # Every case runs beside other jobs; only the eager timing of the full-size cases
        # holds the GPU's timing slot (issue 14), taken once per task after the rest. The
        # full-size cases' files wait on the GPU and go in one flush (tensorio.DeferredFiles).
        files = tensorio.DeferredFiles()
        if timing and job.get("compile_baseline"):
            prewarm_compiled(ref, job, [c for c in ran if c.tier == "full"], device)
        to_time = []  # (case, its event): sent after their timing
        for case in ran + twins:
            files.defer = case.tier in ("full", "fresh")
            ev = _run_case(ref, job, case, device, files, caught)
            if timing and case.tier in ("full", "fresh"):
                to_time.append((case, ev))
            else:
                channel.send("case", **ev)
        t_write = time.perf_counter()
        files.flush()
        write_s = time.perf_counter() - t_write
        # every file of the task is on disk: the supervisor's room gate stops counting what
        # it guessed the task would write (its eager timing may wait long for the slot)
        channel.send("files_written", task=job["task"], label=job.get("label", ""))
        twin_events = {ev["fresh_of"]: ev for case, ev in to_time if "fresh_of" in ev}
        with _SlotSpan(channel, request.get("gpu_slot")) as slot:
            for case, ev in to_time:
                if case.tier == "full":
                    _time_case(ref, job, case, ev, device, timer, slot.take(),
                               twin_events.get(case.name))
                    _refuse_starved(job, case, ev, device, caught)
                channel.send("case", **ev)
        channel.send("task_done", task=job["task"], label=job.get("label", ""),
                     seconds=time.perf_counter() - t0, write_s=write_s)
    except Exception as exc:  # a broken reference is reported, the next task still runs
        channel.send("task_error", task=job["task"], label=job.get("label", ""),
                     type=type(exc).__name__, message=str(exc)[:4000],
                     trace=traceback.format_exc()[-4000:])
    release_gpu_cache(device)
