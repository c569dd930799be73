"""Issue 14: a worker asks for the GPU's timing slot once, after its edge and small cases and
before its first full-size case (which, with the timed loops, must not share the GPU), and
waits for the supervisor's "go" on its request pipe."""

import json
import os
import textwrap
import threading

import pytest

from standins import Events
from kbx_worker import candidate_mode, reference_mode
from kbx_worker.proto import Channel

REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
                Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {})),
                Case("small_two", "small", lambda c: ((c.randn(5), 0.5), {}))]
''')


class SlotEvents(Events):
    """The channel stand-in, with the supervisor granting the slot at once."""

    def wait_for_slot(self):
        self.send("slot_wanted")


def _request(tmp_path, gpu_slot):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(REFERENCE)
    out = tmp_path / "ref"
    events = Events()
    reference_mode.run({"device": "cpu", "jobs": [{
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
        "tiers": ["edge", "small", "full"], "out_dir": str(out)}]}, events)
    job = tmp_path / "job"
    job.mkdir()
    cand = job / "scale.py"
    cand.write_text("def scale(x, factor):\n    return x * factor\n")
    cases = [{"name": e["case"], "tier": e["tier"], "inputs": str(out / f"{e['case']}.in.kbt"),
              "call": e["call"], "out_prefix": str(job / e["case"])}
             for e in events.events if e["ev"] == "case"]
    return {"mode": "candidate", "device": "cpu", "candidate": str(cand), "entry": "scale",
            "task_dir": str(task), "track": "any", "cases": cases, "time": False,
            "gpu_slot": gpu_slot}


def _order(events):
    return [e["ev"] if e["ev"] != "case" else e["case"] for e in events
            if e["ev"] in ("case", "slot_wanted")]


def test_the_slot_is_asked_for_once_before_the_first_full_case(tmp_path):
    events = SlotEvents()
    candidate_mode.run(_request(tmp_path, True), events)
    order = _order(events.events)
    assert order.count("slot_wanted") == 1
    assert order.index("slot_wanted") == order.index("perf_one") - 1
    assert order.index("small_one") < order.index("slot_wanted")


def test_no_slot_is_asked_for_without_gpu_slot(tmp_path):
    events = SlotEvents()
    candidate_mode.run(_request(tmp_path, False), events)
    assert "slot_wanted" not in _order(events.events)


def _channel_pair():
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    return Channel(req_r, ev_w), req_w, ev_r


def test_the_channel_waits_for_go_after_its_request_line():
    channel, req_w, ev_r = _channel_pair()
    os.write(req_w, b'{"mode": "candidate"}\n')
    assert channel.read_request() == {"mode": "candidate"}
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (channel.wait_for_slot(), done.set()))
    waiter.start()
    with os.fdopen(ev_r, "r") as events:
        assert json.loads(events.readline())["ev"] == "slot_wanted"
        assert not done.wait(0.2)  # no "go" yet: still waiting
        os.write(req_w, b"go\n")
        waiter.join(5)
        assert done.is_set()
    os.close(req_w)


def test_a_closed_pipe_instead_of_go_ends_the_worker():
    channel, req_w, ev_r = _channel_pair()
    os.write(req_w, b"{}\n")
    channel.read_request()
    os.close(req_w)
    with pytest.raises(SystemExit):
        channel.wait_for_slot()
    os.close(ev_r)


def test_the_reference_holds_the_slot_from_its_first_full_case_to_the_tasks_end(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(REFERENCE)
    events = SlotEvents()
    job = {"task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
           "tiers": ["edge", "small", "full"], "out_dir": str(tmp_path / "ref")}
    reference_mode.run({"device": "cpu", "gpu_slot": True, "jobs": [job, dict(job, label="y")]},
                       events)
    order = [e["ev"] if e["ev"] != "case" else e["case"] for e in events.events
             if e["ev"] in ("case", "slot_wanted", "slot_done", "task_done")]
    per_task = ["small_one", "slot_wanted", "perf_one", "small_two", "slot_done", "task_done"]
    assert order == per_task * 2


IN_PLACE_REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        x.mul_(factor)  # in place: the inputs file must still hold the values before the call
        return x

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
                Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))]
''')


class FilesAtSlotDone(SlotEvents):
    """Records which files the reference's folder holds when it hands the slot back."""

    def __init__(self, folder):
        super().__init__()
        self.folder, self.at_slot_done = folder, None

    def send(self, ev, **fields):
        if ev == "slot_done":
            self.at_slot_done = sorted(os.listdir(self.folder))
        super().send(ev, **fields)


def _reference_files(tmp_path, name, gpu_slot):
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    (task / "reference.py").write_text(IN_PLACE_REFERENCE)
    out = tmp_path / name
    events = FilesAtSlotDone(out)
    reference_mode.run({"device": "cpu", "gpu_slot": gpu_slot, "jobs": [{
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
        "tiers": ["edge", "small", "full"], "out_dir": str(out)}]}, events)
    return events, {f: (out / f).read_bytes() for f in sorted(os.listdir(out))}


def test_full_case_files_are_written_after_the_slot_goes_back_and_hold_the_same_bytes(tmp_path):
    held, files_held = _reference_files(tmp_path, "with_slot", True)
    _, files_plain = _reference_files(tmp_path, "without_slot", False)
    assert held.at_slot_done is not None
    assert "small_one.in.kbt" in held.at_slot_done  # the small case's files at once
    assert not any(f.startswith("perf_one") for f in held.at_slot_done)  # the full case's later
    order = [e["ev"] for e in held.events if e["ev"] in ("slot_done", "task_done")]
    assert order == ["slot_done", "task_done"]
    assert "perf_one.in.kbt" in files_held and "perf_one.ref.kbt" in files_plain
    assert files_held == files_plain  # pristine inputs, results and shadows, bit for bit
