"""The torch.compile baseline in the reference worker, with a stand-in timer (the real one needs
CUDA) and torch.compile's eager backend (the plumbing, not inductor's code)."""

import textwrap

from standins import Events, StandInTimer
from kbx_worker import reference_mode

REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))]
''')


def _reference_and_job(tmp_path, reference_text, backend):
    """A task folder holding reference_text, its Reference and a reference job for it."""
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(reference_text)
    ref = reference_mode.Reference(str(task), "scale", label=f"compile_test_{backend}")
    job = {"task": "T/scale", "seed": 1, "tiers": ["full"], "out_dir": str(tmp_path / "out"),
           "compile_baseline": True, "compile_backend": backend}
    (tmp_path / "out").mkdir()
    return ref, job


def _run_timed(ref, job, case, events, timer):
    """A full case as the reference worker runs it with timing: the case, then its eager (and
    compiled) loops."""
    ev = reference_mode._run_case(ref, job, case, "cpu")
    reference_mode._time_case(ref, job, case, ev, "cpu", timer)
    events.send("case", **ev)


def _run(tmp_path, reference_text):
    ref, job = _reference_and_job(tmp_path, reference_text, "eager")
    events = Events()
    timer = StandInTimer(reps=3, ms=0.5)
    _run_timed(ref, job, ref.cases[0], events, timer)
    return events.events[-1], timer


def test_full_cases_get_a_compile_timing(tmp_path):
    ev, timer = _run(tmp_path, REFERENCE)
    assert ev["eager_ms"] == [0.5, 0.5, 0.5]
    assert ev["compile_ms"] == [0.5, 0.5, 0.5]
    assert timer.calls == 6  # eager and compiled, timed the same way


def test_the_eager_timing_reports_its_launches_and_holds(tmp_path):
    """What kbx's eager_launch_gaps needs (timing::mark_eager_launch_gaps): the median launch time
    of one eager call and the timed batches, with those that outran their GPU hold. The batches'
    seconds (eager_batches) stay apart from their count."""
    ev, timer = _run(tmp_path, REFERENCE)
    assert ev["phases"]["eager_launch_ms"] == 0.05  # the stand-in's host time per call
    assert ev["phases"]["eager_batch_count"] == 3
    assert ev["phases"]["eager_short_holds"] == 1
    assert ev["phases"]["eager_batches"] == 0.5


def test_a_compile_failure_is_reported_and_eager_still_timed(tmp_path, monkeypatch):
    def refuse(fn, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(reference_mode.torch, "compile", refuse)
    ev, timer = _run(tmp_path, REFERENCE)
    assert ev["eager_ms"] == [0.5, 0.5, 0.5]
    assert "compile_ms" not in ev
    assert ev["compile_error"] == "RuntimeError: no compiler here"


TWO_SHAPES = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return torch.sin(x) * factor + 0.5  # a graph of this test's own

    def cases():
        return [Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {})),
                Case("perf_two", "full", lambda c: ((c.randn(64), 2.0), {}))]
''')


def test_prewarm_compiles_before_the_slot_and_the_slot_only_hits_the_cache(tmp_path):
    """Inductor on the CPU: the prewarm compiles every full case's graph (a miss or a hit of an
    earlier run's cache), then Dynamo forgets them, and the timed pass under the slot compiles
    the same graphs again from Inductor's cache alone: hits, no misses."""
    from torch._dynamo.utils import counters

    ref, job = _reference_and_job(tmp_path, TWO_SHAPES, "inductor")
    counters.clear()
    reference_mode.prewarm_compiled(ref, job, ref.cases, "cpu")
    warm = dict(counters["inductor"])
    assert warm.get("fxgraph_cache_miss", 0) + warm.get("fxgraph_cache_hit", 0) >= 1, warm
    counters.clear()
    events = Events()
    for case in ref.cases:
        _run_timed(ref, job, case, events, StandInTimer(reps=3, ms=0.5))
    timed = dict(counters["inductor"])
    assert timed.get("fxgraph_cache_miss", 0) == 0, timed
    assert timed.get("fxgraph_cache_hit", 0) >= 1, timed
    assert all("compile_ms" in ev for ev in events.events if ev.get("case"))


def test_a_prewarm_that_fails_leaves_the_compile_and_its_error_to_the_slot(tmp_path, monkeypatch):
    # the prewarm swallows the failure (its time outside the slot is all it is for); the timed
    # pass under the slot compiles again and reports the error in the case's event
    ref, job = _reference_and_job(tmp_path, REFERENCE, "eager")

    def refuse(fn, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(reference_mode.torch, "compile", refuse)
    assert reference_mode.prewarm_compiled(ref, job, ref.cases, "cpu") >= 0.0
    events = Events()
    _run_timed(ref, job, ref.cases[0], events, StandInTimer(reps=3, ms=0.5))
    assert events.events[-1]["compile_error"] == "RuntimeError: no compiler here"
