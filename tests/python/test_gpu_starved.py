"""A baseline timed in a worker whose process had found no room on the GPU for an allocation
(session 41 on an H100: PyTorch's cuDNN convolution catches its workspace's failed allocation,
runs a plan that needs less workspace and keeps it for the rest of the process, 1.3x slower in
float32 and 9.5x in bfloat16, bench/conv_workspace_gpu.py) fails its task with GpuStarved, which
kbx computes again alone; alone, the timing stands. Off CUDA the count is 0. Stand-in timers and
counts: the real ones need CUDA."""

import pytest

from standins import StandInTimer, reference_events
from kbx_worker import reference_mode, timer as timer_module


def _run(tmp_path, monkeypatch, ooms, **job):
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: ooms)
    return reference_events(tmp_path, StandInTimer(reps=3, ms=0.5), **job)


def test_a_baseline_of_a_starved_process_fails_its_task_with_gpu_starved(tmp_path, monkeypatch):
    events = _run(tmp_path, monkeypatch, ooms=6)
    errors = [e for e in events if e["ev"] == "task_error"]
    assert len(errors) == 1 and errors[0]["type"] == "GpuStarved", events
    assert "perf_one" in errors[0]["message"] and "6 allocation" in errors[0]["message"]
    # its timing was refused: the full case's event never went out, the small one's did
    sent = [e.get("case") for e in events if e["ev"] == "case"]
    assert "perf_one" not in sent and "small_one" in sent


def test_alone_the_starved_baseline_stands_with_its_count(tmp_path, monkeypatch):
    events = _run(tmp_path, monkeypatch, ooms=6, alone=True)
    assert not [e for e in events if e["ev"] == "task_error"], events
    full = [e for e in events if e["ev"] == "case" and e["case"] == "perf_one"]
    assert full and full[0]["eager_ms"] == [0.5, 0.5, 0.5]
    assert full[0]["phases"]["gpu_ooms"] == 6.0


def test_a_process_that_lost_no_allocation_sends_its_baseline(tmp_path, monkeypatch):
    events = _run(tmp_path, monkeypatch, ooms=0)
    assert not [e for e in events if e["ev"] == "task_error"], events
    full = [e for e in events if e["ev"] == "case" and e["case"] == "perf_one"]
    assert full and "gpu_ooms" not in full[0]["phases"]


def test_cached_baselines_are_not_timed_so_not_refused(tmp_path, monkeypatch):
    """A task whose eager samples come from the cache times nothing here: no count is read."""
    events = _run(tmp_path, monkeypatch, ooms=6, time_eager=False)
    assert not [e for e in events if e["ev"] == "task_error"], events


def test_off_cuda_the_count_is_zero():
    assert timer_module.gpu_ooms("cpu") == 0


def test_the_error_names_what_kbx_retries_alone(monkeypatch):
    # sched::gpu_starved matches "GpuStarved:" (the worker sends "type: message")
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: 1)
    assert reference_mode.GpuStarved.__name__ == "GpuStarved"
    with pytest.raises(reference_mode.GpuStarved):
        class _Case:
            name = "perf"
        reference_mode._refuse_starved({}, _Case(), {"phases": {}}, "cuda")  # not alone


def test_refusing_reads_the_count_of_the_device_it_was_given(monkeypatch):
    seen = []
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: seen.append(device) or 0)

    class _Case:
        name = "perf"
    reference_mode._refuse_starved({}, _Case(), {"phases": {}}, "cuda:1")
    assert seen == ["cuda:1"]


def test_failures_the_worker_caught_in_the_inputs_rebuild_do_not_starve(monkeypatch):
    """The lean inputs' rebuild (the inputs' generators only: no library keeps a plan there)
    catches its own out-of-memory and keeps the inputs file: those failures are left out."""
    counts = iter([2, 5])  # before and after the rebuild: 3 failures in it
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: next(counts))
    caught = reference_mode.CaughtOoms()
    assert caught.rebuild("cuda", lambda: False) is False
    assert caught.count == 3

    class _Case:
        name = "perf"
    ev = {"phases": {}}
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: 3)
    reference_mode._refuse_starved({}, _Case(), ev, "cuda", caught)  # 3 failures, all its own
    assert "gpu_ooms" not in ev["phases"]
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: 4)  # one more elsewhere
    with pytest.raises(reference_mode.GpuStarved, match="1 allocation"):
        reference_mode._refuse_starved({}, _Case(), ev, "cuda", caught)
    assert ev["phases"]["gpu_ooms"] == 1.0


def test_a_rebuild_that_raises_still_counts_its_failures(monkeypatch):
    counts = iter([0, 1])
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: next(counts))
    caught = reference_mode.CaughtOoms()

    def boom():
        raise RuntimeError("x")
    with pytest.raises(RuntimeError):
        caught.rebuild("cuda", boom)
    assert caught.count == 1


def test_each_task_gives_its_cached_gpu_memory_back(tmp_path, monkeypatch):
    """After each task, failed or not, the worker hands its allocator's unused segments back (on
    a GPU), so that a chunk's next task and the other jobs find the room."""
    released = []
    monkeypatch.setattr(reference_mode, "release_gpu_cache", released.append)
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: 0)
    reference_events(tmp_path, StandInTimer(reps=3, ms=0.5))
    assert released == ["cpu"]
    monkeypatch.setattr(timer_module, "gpu_ooms", lambda device: 1)  # the task fails: starved
    (tmp_path / "again").mkdir()
    events = reference_events(tmp_path / "again", StandInTimer(reps=3, ms=0.5))
    assert [e["type"] for e in events if e["ev"] == "task_error"] == ["GpuStarved"]
    assert released == ["cpu", "cpu"]
    reference_mode.release_gpu_cache("cpu")  # off CUDA: nothing to give back, no error
