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


def _run(tmp_path, reference_text):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(reference_text)
    ref = reference_mode.Reference(str(task), "scale", label="compile_test")
    job = {"task": "T/scale", "seed": 1, "tiers": ["full"], "out_dir": str(tmp_path / "out"),
           "compile_baseline": True, "compile_backend": "eager"}
    (tmp_path / "out").mkdir()
    events = Events()
    timer = StandInTimer(reps=3, ms=0.5)
    reference_mode._run_case(ref, job, ref.cases[0], "cpu", events, timer)
    return events.events[-1], timer


def test_full_cases_get_a_compile_timing(tmp_path):
    ev, timer = _run(tmp_path, REFERENCE)
    assert ev["eager_ms"] == [0.5, 0.5, 0.5]
    assert ev["compile_ms"] == [0.5, 0.5, 0.5]
    assert timer.calls == 6  # eager and compiled, timed the same way


def test_a_compile_failure_is_reported_and_eager_still_timed(tmp_path, monkeypatch):
    def refuse(fn, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(reference_mode.torch, "compile", refuse)
    ev, timer = _run(tmp_path, REFERENCE)
    assert ev["eager_ms"] == [0.5, 0.5, 0.5]
    assert "compile_ms" not in ev
    assert ev["compile_error"] == "RuntimeError: no compiler here"
