"""Issue 20 on the CPU: fresh values for every timed call (the variant order, the judged call
picked at random inside the timed sequence), and the persisting-L2 guard against a stand-in
driver. The timed path itself needs CUDA; bench/timing_hardening_gpu.sh checks it on the GPU."""

import ctypes
import itertools
import random
import textwrap

import torch

from standins import Events, StandInTimer, run_reference
from kbx_worker import candidate_mode, timer
from kbx_worker.tensorio import read_kbt

REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
                Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {})),
                Case("perf_two", "full", lambda c: ((c.randn(32), 0.5), {}))]
''')


def test_variant_rounds_cover_every_variant_and_never_repeat():
    for k in (2, 3, 4, 7):
        for seed in range(20):
            order = list(itertools.islice(timer.variant_rounds(random.Random(seed), k), 20 * k))
            assert order[0] != 0  # the warm-up ran on variant 0
            assert all(a != b for a, b in zip(order, order[1:]))
            for r in range(20):  # each round is a permutation
                assert sorted(order[r * k:(r + 1) * k]) == list(range(k))


def test_variant_rounds_depend_on_the_seed():
    a = list(itertools.islice(timer.variant_rounds(random.Random(1), 4), 40))
    b = list(itertools.islice(timer.variant_rounds(random.Random(2), 4), 40))
    assert a != b
    assert list(itertools.islice(timer.variant_rounds(random.Random(1), 1), 3)) == [0, 0, 0]


def test_reservoir_picks_uniformly():
    counts = [0] * 5
    rng = random.Random(7)
    for _ in range(5000):
        pick, kept = timer.Reservoir(rng), None
        for i in range(5):
            if pick.offer():
                kept = i
        counts[kept] += 1
    assert all(850 < c < 1150 for c in counts), counts


def _reference(tmp_path):
    out, cases = run_reference(tmp_path, REFERENCE, "T/scale", "scale", ["edge", "small", "full"],
                               fresh_twin=True)
    return tmp_path / "task", out, cases


def test_every_full_deterministic_case_gets_a_twin(tmp_path):
    _, _, cases = _reference(tmp_path)
    assert set(cases) == {"small_one", "perf_one", "perf_one__fresh", "perf_two",
                          "perf_two__fresh"}


def _time(tmp_path, entry, reps=12, seed=3, name="perf_one", keep_original=False, gets=None,
          strided_original=False):
    task, out, cases = _reference(tmp_path)
    job = tmp_path / "job"
    job.mkdir(exist_ok=True)

    def request_case(n):
        ev = cases[n]
        c = {"name": n, "tier": ev["tier"], "inputs": str(out / f"{n}.in.kbt"), "call": ev["call"],
             "out_prefix": str(job / n), "digest": ev["digest"], "case_seed": ev["case_seed"]}
        if "fresh_of" in ev:
            c["fresh_of"] = ev["fresh_of"]
        return c

    base, twin = request_case(name), request_case(name + "__fresh")
    inputs = candidate_mode.CaseInputs({"task_dir": str(task), "entry": "scale"}, "cpu")
    tensors, _ = inputs.get(base)
    original = {k: v.clone() for k, v in tensors.items()} if keep_original else None
    if strided_original:  # the kept copy in a layout of its own: every other element of a buffer
        original = {k: torch.empty(2 * v.numel(), dtype=v.dtype)[::2].view(v.shape).copy_(v)
                    if v.dim() == 1 else v.clone() for k, v in tensors.items()}
    args, kwargs = candidate_mode.decode_call(base["call"], tensors)
    events = Events()
    if gets is not None:  # counts the inputs made (or read) while timing, by case
        get = inputs.get
        inputs.get = lambda c: (gets.append(c["name"]), get(c))[1]
    ok = candidate_mode._time_case(entry, base, twin, args, kwargs, tensors,
                                   StandInTimer(reps=reps, ms=1.0), inputs,
                                   candidate_mode.LaunchCounter(), "cpu", events, seed=seed,
                                   original=original)
    inputs.get = type(inputs).get.__get__(inputs)  # the helper's own reads below are not counted
    assert ok
    timing, case = events.events
    got = read_kbt(str(job / f"{name}__fresh.cand.kbt")).get("out")
    want = read_kbt(str(out / f"{name}__fresh.ref.kbt"))["out"]
    return timing, case, got, want, inputs.get(base)[0]["arg0"], inputs.get(twin)[0]["arg0"]


def test_every_timed_call_runs_on_other_values_than_the_call_before(tmp_path):
    seen = []

    def honest(x, factor):
        seen.append(x.clone())
        return x * factor

    timing, case, got, want, base, twin = _time(tmp_path, honest)
    assert torch.equal(got, want)
    assert len(timing["variants"]) == 12 and set(timing["variants"]) == {0, 1, 2, 3}
    assert timing["judged_variant"] == 1
    assert all(not torch.equal(a, b) for a, b in zip(seen, seen[1:]))
    for v, x in zip(timing["variants"], seen):  # the variant named is the one the call saw
        if v == 0:
            assert torch.equal(x, base)
        if v == 1:
            assert torch.equal(x, twin)
    assert timing["variants"][case["timed_call"]] == 1  # the judged call is a timed one


def test_a_timing_says_where_its_time_went(tmp_path):
    """For KBX_DEBUG_TIMING's timelines (bench/slot_profile.py): the variants' setup before the
    timer, and the timer's own steps as it reports them; its sample count is not repeated."""
    timing, *_ = _time(tmp_path, lambda x, factor: x * factor)
    assert (timing["estimate_s"], timing["batches_s"], timing["flush_s"]) == (0.25, 0.5, 0.125)
    assert timing["holds_s"] == 0.0625  # of the batches, the GPU holds at their heads
    assert (timing["batches"], timing["short_holds"]) == (3, 1)  # read by the launch_gaps flag
    assert 0 <= timing["setup_s"] <= timing["seconds"]
    assert "samples" not in timing and "samples_s" not in timing


def test_a_timing_says_how_many_gpu_allocations_its_process_lost(tmp_path, monkeypatch):
    """Session 41: cuDNN's convolution keeps a slower plan once its workspace found no room, so
    the timing event carries the process's count of failed allocations (none off CUDA); kbx runs
    the job again alone when it is above 0 (the flag `starved`)."""
    timing, *_ = _time(tmp_path, lambda x, factor: x * factor)
    assert timing["gpu_ooms"] == 0
    monkeypatch.setattr(candidate_mode, "gpu_ooms", lambda device: 6)
    timing, *_ = _time(tmp_path / "again", lambda x, factor: x * factor)
    assert timing["gpu_ooms"] == 6


def test_the_case_values_kept_from_its_judged_call_are_not_made_again(tmp_path):
    """The worker keeps a full case's untouched inputs from its judged call for the timed loop:
    the timer loads those as variant 0 (an in-place candidate updated the tensors meanwhile)
    instead of making the case's inputs again inside the timing slot."""
    seen, gets = [], []

    def in_place(x, factor):  # a right result, and its input updated in place
        seen.append(x.clone())
        out = x * factor
        x.add_(1)
        return out

    timing, case, got, want, base, twin = _time(tmp_path, in_place, keep_original=True, gets=gets)
    assert "perf_one" not in gets and "perf_one__fresh" in gets
    assert torch.equal(got, want)
    for v, x in zip(timing["variants"], seen):
        if v == 0:
            assert torch.equal(x, base)


def test_a_kept_original_of_other_strides_is_loaded_by_value(tmp_path):
    """An honest pattern: the case's kept values need not share the call's tensors' strides."""
    seen = []

    def honest(x, factor):
        seen.append(x.clone())
        return x * factor

    timing, case, got, want, base, twin = _time(tmp_path, honest, strided_original=True)
    assert torch.equal(got, want)
    assert 0 in timing["variants"]
    for v, x in zip(timing["variants"], seen):
        if v == 0:
            assert torch.equal(x, base)


def test_the_judged_call_is_chosen_at_random_among_the_timed_calls(tmp_path):
    picked = {_time(tmp_path / str(s), lambda x, f: x * f, reps=40, seed=s)[1]["timed_call"]
              for s in range(8)}
    assert len(picked) > 2


def test_a_result_kept_from_an_earlier_call_comes_back_stale(tmp_path):
    kept = {}

    def stale(x, factor):  # the first answer, for ever
        kept.setdefault("out", x * factor)
        return kept["out"]

    _, _, got, want, _, _ = _time(tmp_path, stale)
    assert not torch.equal(got, want)


def test_a_cache_that_rechecks_a_few_values_never_hits(tmp_path):
    state = {"hits": 0}

    def sampled(x, factor):  # keeps one answer while 4 sampled values do not change
        key = tuple(x[:4].tolist())
        if state.get("key") == key:
            state["hits"] += 1
            return state["out"]
        state["key"], state["out"] = key, x * factor
        return state["out"]

    _, _, got, want, _, _ = _time(tmp_path, sampled)
    assert torch.equal(got, want) and state["hits"] == 0


def test_an_out_argument_judged_from_a_timed_call_stays_same_as(tmp_path):
    def into(x, factor):
        x.mul_(factor)
        return x

    _, case, got, want, _, _ = _time(tmp_path, into)
    assert case["outputs"][0].get("same_as") == "arg0" and got is None  # it travels once
    after = read_kbt(str(tmp_path / "job" / "perf_one__fresh.cand_after.kbt"))["arg0"]
    assert torch.equal(after, want)  # the twin's values times 3, from the judged timed call


class FakeDriver:
    """The five driver functions L2Guard uses, over a dict of settings."""

    def __init__(self):
        self.limit, self.window, self.resets = 0, 0, 0

        def get_limit(ptr, which):
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_size_t))[0] = self.limit
            return 0

        def set_limit(which, value):
            self.limit = value
            return 0

        def reset():
            self.resets += 1
            return 0

        def get_attr(stream, which, buf):
            w = timer._AccessPolicyWindow.from_address(ctypes.addressof(buf))
            w.num_bytes = self.window
            return 0

        def set_attr(stream, which, buf):
            self.window = timer._AccessPolicyWindow.from_address(ctypes.addressof(buf)).num_bytes
            return 0

        self.fns = {"cuCtxGetLimit": get_limit, "cuCtxSetLimit": set_limit,
                    "cuCtxResetPersistingL2Cache": reset, "cuStreamGetAttribute": get_attr,
                    "cuStreamSetAttribute": set_attr}


def test_the_l2_guard_notes_and_undoes_persisting_settings():
    d = FakeDriver()
    g = timer.L2Guard(d.fns)
    assert not g.check(stream=1) and g.found == []
    d.limit, d.window = 30 << 20, 1 << 20
    assert g.check(stream=1)
    assert d.limit == 0 and d.window == 0 and d.resets >= 1
    assert len(g.found) == 2 and "cudaLimitPersistingL2CacheSize" in g.found[0]
    d.limit = 1
    g.reset(stream=1)
    assert d.limit == 0 and len(g.found) == 2  # the same finding once


def test_the_l2_guard_is_inert_without_a_driver_or_after_an_error():
    if timer._driver() is None:  # no libcuda.so.1 here: the guard does nothing
        assert not timer.L2Guard().active and not timer.L2Guard().check(stream=1)
    d = FakeDriver()
    d.fns["cuCtxGetLimit"] = lambda ptr, which: 801  # CUDA_ERROR_NOT_SUPPORTED
    g = timer.L2Guard(d.fns)
    assert not g.check(stream=1) and not g.active and g.errors


def test_a_stream_that_refuses_attributes_leaves_the_limit_checked():
    d = FakeDriver()
    d.fns["cuStreamGetAttribute"] = lambda stream, which, buf: 400  # invalid handle
    g = timer.L2Guard(d.fns)
    assert not g.check(stream=0) and g.active and g.window_errors
    d.limit = 1 << 20
    assert g.check(stream=0) and d.limit == 0
