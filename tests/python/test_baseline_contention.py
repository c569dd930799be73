"""The reference worker's baselines are timed only on a GPU free of other processes' work: a
timer whose settle gave up (another context's queue did not drain; on the H200 such a neighbour
doubled calls of 3 ms and more, session 30) makes the task's references fail with GpuContended,
which kbx computes again alone after the rest of the run (tests/python/test_reference_oom.py
runs that through kbx). Stand-in timers: the real one needs CUDA."""

import pytest

from standins import StandInTimer, reference_events
from kbx_worker import reference_mode


class ContendedTimer(StandInTimer):
    """Says its settle gave up on the runs numbered in `contended` (0 the first)."""

    def __init__(self, contended):
        super().__init__(reps=3, ms=0.5)
        self.contended, self.runs, self.settles = set(contended), 0, False

    def run(self, fn, before_each=None, after_each=None):
        samples = super().run(fn, before_each, after_each)
        self.last_contended = self.runs in self.contended
        self.runs += 1
        return samples


_run = reference_events


def test_a_baseline_timed_beside_other_work_fails_its_task_with_gpu_contended(tmp_path):
    timer = ContendedTimer(contended={0})
    events = _run(tmp_path, timer)
    errors = [e for e in events if e["ev"] == "task_error"]
    assert len(errors) == 1 and errors[0]["type"] == "GpuContended", events
    assert "perf_one" in errors[0]["message"] and "eager" in errors[0]["message"]
    # the full case's timing was refused: its event never went out
    assert "perf_one" not in [e.get("case") for e in events if e["ev"] == "case"]
    assert timer.settles  # the worker turned the settle on for its baselines


def test_kbx_baseline_settle_0_turns_the_settle_off(tmp_path, monkeypatch):
    monkeypatch.setenv("KBX_BASELINE_SETTLE", "0")
    timer = ContendedTimer(contended=set())
    _run(tmp_path, timer)
    assert timer.settles is False


def test_a_baseline_on_a_drained_gpu_is_sent(tmp_path):
    timer = ContendedTimer(contended=set())
    events = _run(tmp_path, timer)
    assert timer.settle_min_ms == 0.0  # every baseline settles, however short its calls
    assert not [e for e in events if e["ev"] == "task_error"], events
    full = [e for e in events if e["ev"] == "case" and e["case"] == "perf_one"]
    assert full and full[0]["eager_ms"] == [0.5, 0.5, 0.5]


def test_a_contended_compile_baseline_fails_the_task_too(tmp_path):
    events = _run(tmp_path, ContendedTimer(contended={1}), compile_baseline=True,
                  compile_backend="eager")
    errors = [e for e in events if e["ev"] == "task_error"]
    assert len(errors) == 1 and errors[0]["type"] == "GpuContended", events
    assert "torch.compile" in errors[0]["message"]


def test_the_error_names_what_kbx_retries_alone():
    err = reference_mode.GpuContended("x")
    assert type(err).__name__ == "GpuContended"  # sched::gpu_contended matches "GpuContended:"
    with pytest.raises(reference_mode.GpuContended):
        t = ContendedTimer(contended={0})
        t.run(lambda: None)

        class _Case:
            name = "perf"
        reference_mode._refuse_contended(t, _Case(), "eager")
