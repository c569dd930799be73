"""A worker that runs out of GPU memory while it compares a call's outputs with its inputs and
copies them out (kbx's own work after the candidate's call, beside other jobs on the GPU) reports
the case's error as an out-of-memory, which the supervisor runs again alone, instead of dying
with a traceback that reads as the candidate's crash (session 33 on the H200)."""

import pytest
import torch

from standins import Events, SCALE_REFERENCE, run_reference
from kbx_worker import candidate_mode


def _case(tmp_path):
    out, cases = run_reference(tmp_path, SCALE_REFERENCE, "T/scale", "scale", ["full"])
    job = tmp_path / "job"
    job.mkdir()
    ev = cases["perf_one"]
    case = {"name": "perf_one", "tier": ev["tier"], "inputs": str(out / "perf_one.in.kbt"),
            "call": ev["call"], "out_prefix": str(job / "perf_one"), "digest": ev["digest"],
            "case_seed": ev["case_seed"]}
    inputs = candidate_mode.CaseInputs({"task_dir": str(tmp_path / "task"), "entry": "scale"}, "cpu")
    tensors, _ = inputs.get(case)
    args, kwargs = candidate_mode.decode_call(case["call"], tensors)
    pristine = {k: v.clone() for k, v in tensors.items()}
    return case, tensors, args, kwargs, pristine, job


def _raising(exc):
    def same_bits(a, b):
        raise exc
    return same_bits


def _judge(tmp_path, monkeypatch, exc):
    case, tensors, args, kwargs, pristine, job = _case(tmp_path)
    monkeypatch.setattr(candidate_mode, "same_bits", _raising(exc))
    events = Events()
    ok = candidate_mode._judged_call(lambda x, factor: x * factor, case, tensors, args, kwargs,
                                     pristine, candidate_mode.LaunchCounter(), "cpu", events)
    return ok, events.events, job


def test_out_of_memory_while_saving_a_judged_call_is_the_cases_oom(tmp_path, monkeypatch):
    ok, events, job = _judge(tmp_path, monkeypatch,
                             torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate"))
    assert ok is False
    assert [(e["ev"], e["phase"], e["kind"], e["case"]) for e in events] == [
        ("error", "save", "oom", "perf_one")]
    assert not (job / "perf_one.cand.kbt").exists()


def test_other_errors_while_saving_still_end_the_worker(tmp_path, monkeypatch):
    with pytest.raises(ValueError):
        _judge(tmp_path, monkeypatch, ValueError("not memory"))


def test_out_of_memory_while_saving_a_timed_twin_is_the_cases_oom(tmp_path, monkeypatch):
    case, tensors, _, _, pristine, _ = _case(tmp_path)
    monkeypatch.setattr(candidate_mode, "same_bits",
                        _raising(torch.cuda.OutOfMemoryError("CUDA out of memory")))
    events = Events()
    judged = {"tensors": tensors, "result": tensors["arg0"] * 2, "launches": 0, "call": 0}
    ok = candidate_mode._report_judged(case, judged, pristine, "cpu", events)
    assert ok is False
    assert [(e["ev"], e["phase"], e["kind"]) for e in events.events] == [("error", "save", "oom")]


def test_an_honest_save_still_reports_the_case(tmp_path):
    case, tensors, args, kwargs, pristine, job = _case(tmp_path)
    events = Events()
    assert candidate_mode._judged_call(lambda x, factor: x * factor, case, tensors, args, kwargs,
                                       pristine, candidate_mode.LaunchCounter(), "cpu", events)
    assert [e["ev"] for e in events.events] == ["case"]
    assert (job / "perf_one.cand.kbt").exists()


class _FilesOutOfMemory:
    def write(self, path, named):
        pass

    def flush(self):
        raise RuntimeError("CUDA error: out of memory")


def test_out_of_memory_while_held_files_are_written_drops_their_reports(tmp_path):
    events = Events()
    held = candidate_mode.HeldReports(events)
    held.files = _FilesOutOfMemory()
    held.send("case", case="perf_one")
    held.release()
    assert [(e["ev"], e["phase"], e["kind"]) for e in events.events] == [("error", "save", "oom")]


# Before the call and around it: kbx's copies of a case's inputs, and any other work of kbx's own
# on the GPU that raises out of the cases (session 34 on the H100: Normalization/batch_norm, the
# reference as its own candidate, ended as a crash when the copies found no memory beside 6 jobs
# and the references).

_HONEST = "def scale(x, factor):\n    return x * factor\n"


def _run_with(tmp_path, monkeypatch, name, exc):
    from standins import run_candidate

    out, cases = run_reference(tmp_path, SCALE_REFERENCE, "T/scale", "scale", ["small", "full"])

    def raising(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(candidate_mode, name, raising)
    events, _ = run_candidate(tmp_path, out, cases, _HONEST)
    return [e for e in events if e["ev"] in ("case", "error")]


def test_out_of_memory_while_copying_a_cases_inputs_is_the_cases_oom(tmp_path, monkeypatch):
    events = _run_with(tmp_path, monkeypatch, "copies",
                       torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate"))
    assert [(e["ev"], e["phase"], e["kind"]) for e in events] == [("error", "inputs", "oom")]
    assert events[0]["case"]


def test_out_of_memory_anywhere_else_in_kbxs_work_is_an_oom_not_a_crash(tmp_path, monkeypatch):
    events = _run_with(tmp_path, monkeypatch, "decode_call",
                       RuntimeError("CUDA error: out of memory"))
    assert [(e["ev"], e["phase"], e["kind"]) for e in events] == [("error", "harness", "oom")]


def test_other_errors_in_kbxs_work_still_end_the_worker(tmp_path, monkeypatch):
    with pytest.raises(ValueError):
        _run_with(tmp_path, monkeypatch, "copies", ValueError("not memory"))
