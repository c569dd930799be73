"""The fresh twin of a timed case: after timing, fresh values go into the very tensors the
candidate was timed on, and that call's result is judged. Checked here on the CPU with a
stand-in timer (the real one needs CUDA): a candidate that caches its result across calls
returns the stale answer, an honest one the twin's reference answer."""

import textwrap

import pytest
import torch

from standins import Events, SCALE_REFERENCE, StandInTimer, run_reference
from kbx_worker import candidate_mode
from kbx_worker.tensorio import read_kbt

REFERENCE = SCALE_REFERENCE


# The scalar argument is drawn from the seed too (as logspace's start and end are): the twin's
# call differs from the timed one in a value that is not a tensor.
REFERENCE_DRAWN_SCALAR = REFERENCE.replace(
    "((c.randn(64), 3.0), {})", "((c.randn(64), round(c.uniform((), low=1, high=9).item(), 3)), {})")


def _reference(tmp_path, text=REFERENCE):
    out, cases = run_reference(tmp_path, text, "T/scale", "scale", ["edge", "small", "full"],
                               fresh_twin=True)
    return tmp_path / "task", out, cases


def test_reference_adds_one_fresh_twin_of_a_full_case(tmp_path):
    _, out, cases = _reference(tmp_path)
    assert set(cases) == {"small_one", "perf_one", "perf_one__fresh"}
    twin = cases["perf_one__fresh"]
    assert twin["fresh_of"] == "perf_one" and twin["tier"] == "fresh"
    base_in = read_kbt(str(out / "perf_one.in.kbt"))["arg0"]
    twin_in = read_kbt(str(out / "perf_one__fresh.in.kbt"))["arg0"]
    assert base_in.shape == twin_in.shape and not torch.equal(base_in, twin_in)
    assert (out / "perf_one__fresh.ref.kbt").exists() and (out / "perf_one__fresh.shadow.kbt").exists()


def _request_case(cases, out, job, name):
    """A candidate request's case from the reference's event of it: inputs, checksums, seed."""
    ev = cases[name]
    c = {"name": name, "tier": ev["tier"], "inputs": str(out / f"{name}.in.kbt"),
         "call": ev["call"], "out_prefix": str(job / name), "digest": ev["digest"],
         "case_seed": ev["case_seed"]}
    if "fresh_of" in ev:
        c["fresh_of"] = ev["fresh_of"]
    return c


def _time_twin(tmp_path, entry, extra_tensor=False, text=REFERENCE, key="out", suffix=".cand.kbt"):
    task, out, cases = _reference(tmp_path, text)
    job = tmp_path / "job"
    job.mkdir()
    base, twin = (_request_case(cases, out, job, n) for n in ("perf_one", "perf_one__fresh"))
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    tensors, _ = inputs.get(base)
    args, kwargs = candidate_mode.decode_call(base["call"], tensors)
    if extra_tensor:  # one the twin's values do not cover: the twin is then judged on its own
        tensors = dict(tensors, extra=torch.zeros(1))
    events = Events()
    ok = candidate_mode._time_case(entry, base, twin, args, kwargs, tensors, StandInTimer(reps=4, ms=1.0), inputs,
                                   candidate_mode.LaunchCounter(), "cpu", events)
    assert ok
    assert [e["ev"] for e in events.events] == ["timing", "case"]
    got = read_kbt(str(job / ("perf_one__fresh" + suffix)))[key]
    want = read_kbt(str(out / ("perf_one__fresh" + suffix.replace("cand", "ref"))))[key]
    return got, want


def test_an_honest_candidate_gets_the_twin_right(tmp_path):
    got, want = _time_twin(tmp_path, lambda x, factor: x * factor)
    assert torch.equal(got, want)


def test_a_cached_result_comes_back_stale(tmp_path):
    cache = {}

    def cached(x, factor):
        key = x.data_ptr()
        if key not in cache:
            cache[key] = x * factor
        return cache[key]

    got, want = _time_twin(tmp_path, cached)
    assert not torch.equal(got, want)


def test_tensors_that_cannot_take_the_values_get_the_twin_judged_apart(tmp_path):
    got, want = _time_twin(tmp_path, lambda x, factor: x * factor, extra_tensor=True)
    assert torch.equal(got, want)


def test_a_twin_whose_scalars_differ_is_judged_on_its_own_call(tmp_path):
    # Writing the twin's tensors into the timed call cannot give it the twin's scalar: the
    # honest result would then be judged against the wrong reference (a false stale_result).
    _, _, cases = _reference(tmp_path / "probe", REFERENCE_DRAWN_SCALAR)
    assert cases["perf_one"]["call"]["args"][1] != cases["perf_one__fresh"]["call"]["args"][1]
    got, want = _time_twin(tmp_path, lambda x, factor: x * factor, text=REFERENCE_DRAWN_SCALAR)
    assert torch.equal(got, want)


# The out= tensor's size follows the values (as masked_select's does): the twin's tensors do not
# fit the timed call's, and neither do most decoys'.
REFERENCE_VALUE_SHAPED_OUT = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, out):
        return torch.masked_select(x, x > 0, out=out)

    def _positives(c, n):
        x = c.randn(n)
        return (x, torch.empty(int((x > 0).sum()), dtype=x.dtype)), {}

    def cases():
        return [Case("small_one", "small", lambda c: _positives(c, 8)),
                Case("perf_one", "full", lambda c: _positives(c, 64))]
''')


def test_a_twin_whose_out_tensor_has_another_size_is_judged_on_its_own_call(tmp_path):
    # Found on the H200 (Fusion/fused_masked_select_add_gelu): writing the twin's values into
    # the timed call broke the honest reference itself (a false runtime_error).
    _, _, cases = _reference(tmp_path / "probe", REFERENCE_VALUE_SHAPED_OUT)
    sizes = [cases[n]["call"] for n in ("perf_one", "perf_one__fresh")]
    assert sizes[0] == sizes[1]  # the call's structure is the same, only the tensors' sizes differ
    got, want = _time_twin(tmp_path, lambda x, out: torch.masked_select(x, x > 0, out=out),
                           text=REFERENCE_VALUE_SHAPED_OUT, key="arg1", suffix=".cand_after.kbt")
    assert torch.equal(got, want)


class _SlotChannel(Events):
    """The channel stand-in with the slot granted at once."""

    def wait_for_slot(self):
        self.send("slot_wanted")


@pytest.mark.parametrize("keep_quiet", ["1", "0"])
def test_a_timed_case_and_its_twin_get_inputs_built_before_the_slot_and_judged_alike(
        tmp_path, monkeypatch, keep_quiet):
    """The worker's whole path of a timed case on the CPU (stand-in timer): the inputs of the
    case and of its twin (session 18) and the twin's decoys (session 19) are rebuilt before the
    slot is asked for, and the twin's judged result is the reference's."""
    task, out, cases = _reference(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    request_cases = [_request_case(cases, out, job, n)
                     for n in ("small_one", "perf_one", "perf_one__fresh")]
    channel = _SlotChannel()
    built, real_rebuild = [], candidate_mode.CaseInputs._rebuild

    def rebuild(self, spec, seed):
        built.append((seed, "slot_wanted" in [e["ev"] for e in channel.events]))
        return real_rebuild(self, spec, seed)

    monkeypatch.setattr(candidate_mode.CaseInputs, "_rebuild", rebuild)
    monkeypatch.setenv("KBX_KEEP_QUIET", keep_quiet)
    timers = []
    monkeypatch.setattr(candidate_mode, "CudaTimer",
                        lambda device, **kw: timers.append(StandInTimer(reps=4)) or timers[-1])
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    slot = candidate_mode.SlotWait(channel, True)
    held = candidate_mode.HeldReports(channel)
    candidate_mode._run_cases({"cases": request_cases}, lambda x, factor: x * factor, inputs,
                              candidate_mode.LaunchCounter(), "cpu", channel, True, slot, held)
    slot.hand_back()
    held.release()
    seeds = {cases[n]["case_seed"]: n for n in ("perf_one", "perf_one__fresh")}
    under_slot = [seeds[s] for s, after in built if after and s in seeds]
    before_slot = [seeds[s] for s, after in built if not after and s in seeds]
    assert sorted(before_slot) == ["perf_one", "perf_one__fresh"] and not under_slot, built
    decoys = [after for s, after in built if s not in seeds and s != cases["small_one"]["case_seed"]]
    assert decoys == [False] * candidate_mode.DECOYS, built
    assert [e["ev"] for e in channel.events if e["ev"] in ("timing", "slot_wanted")] == [
        "slot_wanted", "timing"]
    # the job's kept hush ends after its last timed case (CudaTimer.keep_quiet), unless
    # KBX_KEEP_QUIET=0 has each case end its own
    assert len(timers) == 1 and timers[0].quiet_ends == 1
    assert timers[0].keep_quiet == (keep_quiet != "0")
    got = read_kbt(str(job / "perf_one__fresh.cand.kbt"))["out"]
    want = read_kbt(str(out / "perf_one__fresh.ref.kbt"))["out"]
    assert torch.equal(got, want)


def _variants_timed(tmp_path, prefetch):
    """The values each timed call of the base case saw, with the twin's decoys prefetched or
    built in the timed loop."""
    task, out, cases = _reference(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    base, twin = (_request_case(cases, out, job, n) for n in ("perf_one", "perf_one__fresh"))
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    if prefetch:
        assert inputs.prefetch([base, twin], 1 << 20, [twin]) > 0
        assert twin["name"] in inputs.ready_decoys
    tensors, _ = inputs.get(base)
    args, kwargs = candidate_mode.decode_call(base["call"], tensors)
    seen = []

    def entry(x, factor):
        seen.append(x.clone())
        return x * factor

    assert candidate_mode._time_case(entry, base, twin, args, kwargs, tensors,
                                     StandInTimer(reps=12), inputs, candidate_mode.LaunchCounter(),
                                     "cpu", Events(), seed=3)
    return seen


def test_prefetched_decoys_are_the_values_the_timed_loop_would_build(tmp_path):
    with_prefetch = _variants_timed(tmp_path / "a", True)
    without = _variants_timed(tmp_path / "b", False)
    assert len(with_prefetch) == len(without) == 12
    assert all(torch.equal(a, b) for a, b in zip(with_prefetch, without))
    distinct = {tuple(v.tolist()) for v in without}
    assert len(distinct) == 2 + candidate_mode.DECOYS  # its own, the twin's and the decoys


def test_decoys_past_the_cap_are_built_in_the_timed_loop(tmp_path):
    task, out, cases = _reference(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    base, twin = (_request_case(cases, out, job, n) for n in ("perf_one", "perf_one__fresh"))
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    both = inputs.prefetch([base, twin], 1 << 20, [])
    assert both > 0 and not inputs.ready_decoys  # none asked for
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    assert inputs.prefetch([base, twin], both, [twin]) == both  # no room left for them
    assert set(inputs.ready) == {"perf_one", "perf_one__fresh"} and not inputs.ready_decoys
    assert len(inputs.decoys(twin, candidate_mode.DECOYS)) == candidate_mode.DECOYS
