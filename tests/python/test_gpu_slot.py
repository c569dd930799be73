"""Issue 14: a worker asks for the GPU's timing slot once, after its edge and small cases and
before its first full-size case (which, with the timed loops, must not share the GPU), and
waits for the supervisor's "go" on its request pipe."""

import json
import os
import pathlib
import textwrap
import threading

import pytest

from standins import Events, StandInTimer, run_reference
from kbx_worker import candidate_mode, reference_mode
from kbx_worker.proto import Channel

ROOT = pathlib.Path(__file__).resolve().parents[2]

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


def _request(tmp_path, gpu_slot, reference=REFERENCE,
             candidate="def scale(x, factor):\n    return x * factor\n"):
    out, ref_cases = run_reference(tmp_path, reference, "T/scale", "scale",
                                   ["edge", "small", "full"])
    task = tmp_path / "task"
    job = tmp_path / "job"
    job.mkdir()
    cand = job / "scale.py"
    cand.write_text(candidate)
    cases = [{"name": e["case"], "tier": e["tier"], "inputs": str(out / f"{e['case']}.in.kbt"),
              "call": e["call"], "out_prefix": str(job / e["case"])}
             for e in ref_cases.values()]
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
    assert order.index("small_one") < order.index("slot_wanted")


class CandidateFilesAtSlotDone(SlotEvents):
    """Records the job folder's files at the candidate's slot_done and at each case report."""

    def __init__(self, folder):
        super().__init__()
        self.folder, self.at = folder, {}

    def send(self, ev, **fields):
        self.at[fields.get("case", ev)] = sorted(os.listdir(self.folder))
        super().send(ev, **fields)


def test_a_candidate_hands_the_slot_back_once_then_writes_and_reports_its_full_cases(tmp_path):
    """The full case's outputs wait (copies) while the slot is held; after slot_done they are
    written, and only then reported: the supervisor reads them as soon as the report comes."""
    request = _request(tmp_path, True)
    events = CandidateFilesAtSlotDone(tmp_path / "job")
    candidate_mode.run(request, events)
    order = [e["ev"] if e["ev"] != "case" else e["case"] for e in events.events
             if e["ev"] in ("case", "slot_wanted", "slot_done")]
    assert order == ["small_one", "slot_wanted", "small_two", "slot_done", "perf_one"]
    assert "perf_one.cand.kbt" not in events.at["slot_done"]
    assert "perf_one.cand.kbt" in events.at["perf_one"]
    plain = tmp_path / "plain"
    plain.mkdir()
    unslotted = dict(request, gpu_slot=False, cases=[
        dict(c, out_prefix=str(plain / c["name"])) for c in request["cases"]])
    candidate_mode.run(unslotted, Events())
    assert (plain / "perf_one.cand.kbt").read_bytes() == (
        tmp_path / "job" / "perf_one.cand.kbt").read_bytes()


def test_no_slot_is_asked_for_without_gpu_slot(tmp_path):
    events = SlotEvents()
    candidate_mode.run(_request(tmp_path, False), events)
    assert "slot_wanted" not in _order(events.events)


# Honest patterns whose outputs the held path must write as they are: an input updated in place
# and returned (it travels once, `same_as`), a transposed (non-contiguous) result, an expanded
# (stride 0) one, several outputs.
PATTERNS_REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        x.mul_(factor)
        return x, (x * 2).t(), x[:1].expand(3, -1), x.sum()

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(4, 6), 2.0), {})),
                Case("perf_one", "full", lambda c: ((c.randn(8, 16), 3.0), {}))]
''')
PATTERNS_CANDIDATE = textwrap.dedent('''
    def scale(x, factor):
        x.mul_(factor)
        return x, (x * 2).t(), x[:1].expand(3, -1), x.sum()
''')


def test_held_outputs_of_honest_patterns_are_the_bytes_an_unslotted_run_writes(tmp_path):
    request = _request(tmp_path, True, PATTERNS_REFERENCE, PATTERNS_CANDIDATE)
    held_events = SlotEvents()
    candidate_mode.run(request, held_events)
    plain = tmp_path / "plain"
    plain.mkdir()
    plain_events = Events()
    candidate_mode.run(dict(request, gpu_slot=False, cases=[
        dict(c, out_prefix=str(plain / c["name"])) for c in request["cases"]]), plain_events)
    job = tmp_path / "job"
    written = sorted(f for f in os.listdir(job) if f.startswith("perf_one."))
    assert "perf_one.cand.kbt" in written and "perf_one.cand_after.kbt" in written
    for name in written:
        assert (job / name).read_bytes() == (plain / name).read_bytes(), name

    def report(events):
        ev = next(e for e in events.events if e.get("case") == "perf_one" and e["ev"] == "case")
        return ev["structure"], ev["outputs"]
    assert report(held_events) == report(plain_events)  # same_as, shapes, aliases alike
    assert any(o.get("same_as") for o in report(held_events)[1])


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


def _reference_order(tmp_path, timer, **job_fields):
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    (task / "reference.py").write_text(REFERENCE)
    events = SlotEvents()
    job = {"task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
           "tiers": ["edge", "small", "full"], "out_dir": str(tmp_path / "ref"), **job_fields}
    reference_mode.run({"device": "cpu", "gpu_slot": True, "jobs": [job, dict(job, label="y")]},
                       events, timer=timer)
    return events.events, [e["ev"] if e["ev"] != "case" else e["case"] for e in events.events
                           if e["ev"] in ("case", "slot_wanted", "slot_done", "task_done")]


def test_the_reference_holds_the_slot_only_for_its_eager_timing(tmp_path):
    """Its cases (full ones and fresh twins included) run beside other jobs; the slot is taken
    once per task, after them, for the full cases' eager loops, and handed back before
    task_done. The full cases' events carry their timings."""
    timer = StandInTimer(reps=3)
    events, order = _reference_order(tmp_path, timer, fresh_twin=True)
    per_task = ["small_one", "small_two", "slot_wanted", "perf_one", "perf_one__fresh",
                "slot_done", "task_done"]
    assert order == per_task * 2
    full = [e for e in events if e.get("case") == "perf_one"]
    assert [e["eager_ms"] for e in full] == [[1.0] * 3] * 2
    assert all("eager_ms" not in e for e in events if e.get("case") == "perf_one__fresh")
    assert timer.calls == 6  # three timed calls of the one full case, per task


def test_a_reference_whose_eager_timing_is_cached_takes_no_slot(tmp_path):
    timer = StandInTimer(reps=3)
    events, order = _reference_order(tmp_path, timer, fresh_twin=True, time_eager=False)
    assert "slot_wanted" not in order and "slot_done" not in order
    assert "perf_one" in order and "perf_one__fresh" in order
    assert timer.calls == 0 and all("eager_ms" not in e for e in events)


def test_the_timed_inputs_are_the_cases_own_values(tmp_path):
    """The eager loop runs on inputs made again from the case's seed: the same values as the
    judged call's (its inputs file)."""
    seen = []

    class Recording(StandInTimer):
        def run(self, fn, before_each=None, after_each=None):
            seen.append(fn())
            return super().run(fn, before_each, after_each)

    _reference_order(tmp_path, Recording(reps=1))
    from kbx_worker import tensorio
    ref_out = tensorio.read_kbt(str(tmp_path / "ref" / "perf_one.ref.kbt"), "cpu")
    assert len(seen) == 2 and all(bool((s == list(ref_out.values())[0]).all()) for s in seen)


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
        self.folder, self.at_slot_done, self.at_files_written = folder, None, None

    def send(self, ev, **fields):
        if ev == "slot_done":
            self.at_slot_done = sorted(os.listdir(self.folder))
        if ev == "files_written":
            self.at_files_written = sorted(os.listdir(self.folder))
        super().send(ev, **fields)


def _reference_files(tmp_path, name, gpu_slot):
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    (task / "reference.py").write_text(IN_PLACE_REFERENCE)
    out = tmp_path / name
    events = FilesAtSlotDone(out)
    reference_mode.run({"device": "cpu", "gpu_slot": gpu_slot, "jobs": [{
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
        "tiers": ["edge", "small", "full"], "out_dir": str(out)}]}, events,
        timer=StandInTimer(reps=2) if gpu_slot else None)
    return events, {f: (out / f).read_bytes() for f in sorted(os.listdir(out))}


def test_full_case_files_are_written_before_the_slot_is_asked_for_and_hold_the_same_bytes(
        tmp_path):
    """The eager loops (which update the inputs in place here) run after every file is written:
    the files hold the pristine inputs and the judged call's results, as without timing."""
    held, files_held = _reference_files(tmp_path, "with_slot", True)
    _, files_plain = _reference_files(tmp_path, "without_slot", False)
    assert held.at_slot_done is not None
    assert "perf_one.in.kbt" in held.at_slot_done and "perf_one.ref.kbt" in held.at_slot_done
    order = [e["ev"] for e in held.events
             if e["ev"] in ("files_written", "slot_wanted", "slot_done", "task_done")]
    # files_written: the supervisor's room gate stops counting the task's guess from here on
    assert order == ["files_written", "slot_wanted", "slot_done", "task_done"]
    assert held.at_files_written == held.at_slot_done  # every file was written by then
    assert [e["task"] for e in held.events if e["ev"] == "files_written"] == ["T/scale"]
    assert files_held == files_plain  # pristine inputs, results and shadows, bit for bit


def _inputs_asked(monkeypatch, events, fail_first=False):
    """Records each case whose inputs are read (these requests carry no checksums, so inputs come
    from the reference's files) and whether the slot was asked for by then; fail_first: the first
    read of the full case raises (as an out-of-memory would)."""
    asked, real_read = [], candidate_mode.read_kbt

    def read_kbt(path, device):
        name = os.path.basename(path)[: -len(".in.kbt")]
        asked.append((name, "slot_wanted" in [e["ev"] for e in events.events]))
        if fail_first and name == "perf_one" and [n for n, _ in asked].count(name) == 1:
            raise RuntimeError("CUDA out of memory (stand-in)")
        return real_read(path, device)

    monkeypatch.setattr(candidate_mode, "read_kbt", read_kbt)
    return asked


def test_full_size_inputs_are_built_before_the_slot_is_asked_for(tmp_path, monkeypatch):
    """Session 18: rebuilding inputs was an eighth of the slot's time on the H200; the worker
    builds them first (within PREFETCH_BYTES), then takes the slot, and the outputs are the
    bytes a run without the slot writes."""
    request = _request(tmp_path, True)
    events = SlotEvents()
    asked = _inputs_asked(monkeypatch, events)
    candidate_mode.run(request, events)
    assert ("perf_one", False) in asked and ("perf_one", True) not in asked, asked
    plain = tmp_path / "plain"
    plain.mkdir()
    candidate_mode.run(dict(request, gpu_slot=False, cases=[
        dict(c, out_prefix=str(plain / c["name"])) for c in request["cases"]]), Events())
    assert (plain / "perf_one.cand.kbt").read_bytes() == (
        tmp_path / "job" / "perf_one.cand.kbt").read_bytes()


def test_inputs_past_the_cap_or_after_a_failed_prefetch_are_built_under_the_slot(tmp_path,
                                                                                monkeypatch):
    monkeypatch.setattr(candidate_mode, "PREFETCH_BYTES", 0)
    events = SlotEvents()
    asked = _inputs_asked(monkeypatch, events)
    candidate_mode.run(_request(tmp_path, True), events)
    assert ("perf_one", True) in asked, asked  # built again once the slot was granted
    monkeypatch.undo()
    events = SlotEvents()
    asked = _inputs_asked(monkeypatch, events, fail_first=True)
    candidate_mode.run(_request(tmp_path / "again", True), events)
    assert ("perf_one", False) in asked and ("perf_one", True) in asked, asked
    assert [e["case"] for e in events.events if e["ev"] == "case"].count("perf_one") == 1
    assert not [e for e in events.events if e["ev"] == "error"], events.events


def test_the_cases_wanted_under_the_slot_are_the_full_ones_each_timed_one_with_its_twin():
    cases = [{"name": "e", "tier": "edge"}, {"name": "f1", "tier": "full"},
             {"name": "f2", "tier": "full"}, {"name": "f1__fresh", "tier": "fresh",
                                              "fresh_of": "f1"}]
    twins = {"f1": cases[3]}
    assert [c["name"] for c in candidate_mode._slot_cases(cases, twins)] == [
        "f1", "f1__fresh", "f2"]
    assert [c["name"] for c in candidate_mode._slot_cases(cases, {})] == [
        "f1", "f2", "f1__fresh"]


def test_decoys_are_prefetched_only_for_twins_written_into_their_timed_call():
    call = {"args": [{"tensor": "arg0"}, 3.0]}
    cases = [{"name": "f1", "tier": "full", "call": call}, {"name": "f2", "tier": "full",
                                                           "call": call}]
    twins = {"f1": {"name": "f1__fresh", "fresh_of": "f1", "call": call},
             "f2": {"name": "f2__fresh", "fresh_of": "f2", "call": dict(call, args=[
                 {"tensor": "arg0"}, 5.0])}}  # a scalar drawn from the seed: judged apart
    assert [t["name"] for t in candidate_mode._twins_with_decoys(cases, twins)] == ["f1__fresh"]
    assert candidate_mode._twins_with_decoys(cases, {}) == []


def test_nothing_is_prefetched_on_a_gpu_short_of_free_memory(monkeypatch):
    inputs = candidate_mode.CaseInputs({}, "cuda")
    monkeypatch.setattr(candidate_mode.torch.cuda, "mem_get_info",
                        lambda device=None: (8 * candidate_mode.PREFETCH_BYTES - 1, 1 << 40))
    monkeypatch.setattr(candidate_mode.CaseInputs, "get",
                        lambda self, case: pytest.fail("built without room"))
    assert inputs.prefetch([{"name": "perf_one"}], candidate_mode.PREFETCH_BYTES) == 0
    assert candidate_mode._gpu_has_room("cpu", 1 << 60)
    monkeypatch.setattr(candidate_mode.torch.cuda, "mem_get_info",
                        lambda device=None: (8 * candidate_mode.PREFETCH_BYTES, 1 << 40))
    assert candidate_mode._gpu_has_room("cuda", 8 * candidate_mode.PREFETCH_BYTES)


# --slot-at launch: the probe asks for the slot at a full-size call's first GPU work. On the CPU
# the probe's CUPTI callback is played by FakeLaunchProbe: the candidate calls fake_gpu.launch()
# where its GPU work would start.

class LaunchSlotEvents(SlotEvents):
    def slot_fds(self):
        return (-1, -1)


class FakeLaunchProbe:
    """LaunchSlotProbe's slot_arm / slot_disarm, with launch() standing for the CUPTI callback."""

    def __init__(self, channel_holder, arms=True):
        self.channel_holder, self.arms = channel_holder, arms
        self.armed = self.taken = False
        self.arm_count = 0

    def slot_arm(self, request_fd, event_fd):
        if not self.arms:
            return False
        self.armed, self.taken = True, False
        self.arm_count += 1
        return True

    def slot_disarm(self):
        taken, self.armed, self.taken = self.taken, False, False
        return taken

    def launch(self):
        if self.armed:
            self.channel_holder[0].send("slot_wanted", at="launch")
            self.armed, self.taken = False, True


LAUNCHING = textwrap.dedent('''
    import fake_gpu

    def scale(x, factor):
        fake_gpu.before()  # a compile, say: CPU work before the call's first launch
        fake_gpu.launch()
        return x * factor
''')


@pytest.fixture
def fake_gpu(monkeypatch):
    import sys
    import types
    holder = [None]
    probe = FakeLaunchProbe(holder)
    seen = []
    module = types.SimpleNamespace(
        launch=probe.launch,
        before=lambda: seen.append("slot_wanted" in [e["ev"] for e in holder[0].events]))
    monkeypatch.setitem(sys.modules, "fake_gpu", module)
    monkeypatch.setattr(candidate_mode, "LaunchSlotProbe", lambda: probe)
    return holder, probe, seen


def test_at_launch_the_full_call_asks_at_its_first_gpu_work_not_before(tmp_path, fake_gpu):
    holder, probe, before_launch = fake_gpu
    request = dict(_request(tmp_path, True, candidate=LAUNCHING), slot_at="launch")
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    wanted = [e for e in events.events if e["ev"] == "slot_wanted"]
    assert len(wanted) == 1 and wanted[0].get("at") == "launch", events.events
    # small_one, perf_one, small_two ran in that order: perf_one's work before its first launch
    # (before_launch[1]) ran without the slot; the slot was held from then to the end.
    assert before_launch == [False, False, True], before_launch
    assert probe.arm_count == 1
    order = [e["ev"] if e["ev"] != "case" else e["case"] for e in events.events
             if e["ev"] in ("case", "slot_wanted", "slot_done")]
    assert order == ["small_one", "slot_wanted", "small_two", "slot_done", "perf_one"]
    plain = tmp_path / "plain"
    plain.mkdir()
    holder[0] = Events()
    candidate_mode.run(dict(request, gpu_slot=False, cases=[
        dict(c, out_prefix=str(plain / c["name"])) for c in request["cases"]]), holder[0])
    assert (plain / "perf_one.cand.kbt").read_bytes() == (
        tmp_path / "job" / "perf_one.cand.kbt").read_bytes()


TWO_FULL = REFERENCE.replace(
    'Case("small_two"',
    'Case("perf_two", "full", lambda c: ((c.randn(32).double(), 2.0), {})), Case("small_two"')


def _held_now(events):
    """Whether the slot is this job's now, from its events so far: asked for and not handed
    back since (a stand-in channel grants at once)."""
    held = False
    for e in events:
        held = {"slot_wanted": True, "slot_done": False}.get(e["ev"], held)
    return held


def test_at_launch_the_slot_goes_back_between_full_calls_and_each_asks_again(tmp_path,
                                                                              fake_gpu):
    """--slot-at launch, two full-size calls: the slot goes back after the first (slot_done
    with again), so that the second call's work before its first launch (a recompile for its new
    dtype) runs without it; that call asks again at its launch; the job's last slot_done is
    plain; the outputs are those of a run without the slot."""
    import sys
    holder, probe, _ = fake_gpu
    held_before_launch = []
    sys.modules["fake_gpu"].before = lambda: held_before_launch.append(
        _held_now(holder[0].events))
    request = dict(_request(tmp_path, True, reference=TWO_FULL, candidate=LAUNCHING),
                   slot_at="launch")
    assert [c["tier"] for c in request["cases"]].count("full") == 2
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    # small_one, perf_one, perf_two, small_two: neither full call held the slot before its
    # launch; small_two ran holding it (after the last full case, as before)
    assert held_before_launch == [False, False, False, True], held_before_launch
    assert probe.arm_count == 2
    slot = [(e["ev"], e.get("at"), e.get("again")) for e in events.events
            if e["ev"] in ("slot_wanted", "slot_done")]
    assert slot == [("slot_wanted", "launch", None), ("slot_done", None, True),
                    ("slot_wanted", "launch", None), ("slot_done", None, None)], slot
    plain = tmp_path / "plain"
    plain.mkdir()
    holder[0] = Events()
    candidate_mode.run(dict(request, gpu_slot=False, slot_at="call", cases=[
        dict(c, out_prefix=str(plain / c["name"])) for c in request["cases"]]), holder[0])
    for name in ("perf_one", "perf_two"):
        assert (plain / f"{name}.cand.kbt").read_bytes() == (
            tmp_path / "job" / f"{name}.cand.kbt").read_bytes()


def test_at_the_call_two_full_calls_share_one_grant(tmp_path):
    """Without --slot-at launch the slot is asked for once and handed back once."""
    request = _request(tmp_path, True, reference=TWO_FULL)
    events = SlotEvents()
    candidate_mode.run(request, events)
    assert [e["ev"] for e in events.events if e["ev"] in ("slot_wanted", "slot_done")] == [
        "slot_wanted", "slot_done"]
    assert not any("again" in e for e in events.events)


def test_at_launch_a_call_without_gpu_work_takes_the_slot_right_after_it(tmp_path, fake_gpu):
    holder, probe, _ = fake_gpu
    quiet = LAUNCHING.replace("    fake_gpu.launch()\n", "")
    request = dict(_request(tmp_path, True, candidate=quiet), slot_at="launch")
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    order = [e["ev"] if e["ev"] != "case" else e["case"] for e in events.events
             if e["ev"] in ("case", "slot_wanted", "slot_done")]
    assert order == ["small_one", "slot_wanted", "small_two", "slot_done", "perf_one"]
    assert [e.get("at") for e in events.events if e["ev"] == "slot_wanted"] == [None]
    assert not probe.armed


def test_at_launch_an_inert_probe_or_inputs_left_to_the_slot_take_it_before_the_call(
        tmp_path, fake_gpu, monkeypatch):
    holder, probe, before_launch = fake_gpu
    probe.arms = False  # on the CPU, or CUPTI refused a subscriber
    request = dict(_request(tmp_path, True, candidate=LAUNCHING), slot_at="launch")
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    assert before_launch == [False, True, True], before_launch
    probe.arms = True
    before_launch.clear()
    monkeypatch.setattr(candidate_mode, "PREFETCH_BYTES", 0)  # inputs built under the slot
    request = dict(_request(tmp_path / "again", True, candidate=LAUNCHING), slot_at="launch")
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    assert before_launch == [False, True, True], before_launch
    assert probe.arm_count == 0


def test_at_launch_a_failed_armed_call_is_disarmed_and_the_job_goes_on(tmp_path, fake_gpu):
    holder, probe, _ = fake_gpu
    failing = LAUNCHING.replace("        return x * factor",
                                "        if x.numel() == 64:\n"
                                "            raise ValueError('no')\n"
                                "        return x * factor")
    request = dict(_request(tmp_path, True, candidate=failing), slot_at="launch")
    holder[0] = events = LaunchSlotEvents()
    candidate_mode.run(request, events)
    assert not probe.armed
    evs = [e["ev"] for e in events.events]
    assert evs.count("slot_wanted") == 1 and evs.count("slot_done") == 1, events.events
    assert evs.index("slot_wanted") < evs.index("slot_done")


def test_the_probe_asks_on_the_channels_own_pipes_and_leaves_later_answers_to_it():
    """What libkbx_probe.so's slot request does (slot_request.cpp: one line out, one line in, a
    byte at a time), played on a real Channel's descriptors: the Channel's later reads and
    writes are undisturbed."""
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    os.write(req_w, b'{"mode": "candidate"}\n')
    channel = Channel(req_r, ev_w)
    assert channel.read_request() == {"mode": "candidate"}
    channel.send("imported")
    request_fd, event_fd = candidate_mode._slot_pipes(channel)
    assert request_fd >= 1000 and event_fd >= 1000  # the Channel's hidden copies
    os.write(event_fd, b'{"ev":"slot_wanted","at":"launch","api":"cuLaunchKernel"}\n')
    os.write(req_w, b"go\nquiet\n")
    answer = b""
    while not answer.endswith(b"\n"):
        answer += os.read(request_fd, 1)
    assert answer == b"go\n"
    assert channel.ask_quiet() is True  # "quiet" was left in the pipe for the Channel
    channel.send("done")
    lines = os.read(ev_r, 4096).decode().splitlines()
    assert [json.loads(x)["ev"] for x in lines] == ["imported", "slot_wanted", "quiet_wanted",
                                                    "done"]


def test_without_the_probe_or_cuda_nothing_is_armed(monkeypatch):
    monkeypatch.delenv("KBX_PROBE_LIB", raising=False)
    probe = candidate_mode.LaunchSlotProbe()
    assert probe.slot_arm(3, 4) is False and probe.slot_disarm() is False
    # The real library, loaded where CUDA never started it: inert, it arms nothing.
    kbx_bin = os.environ.get("KBX_BIN")
    lib = os.path.join(os.path.dirname(kbx_bin), "probe", "libkbx_probe.so") if kbx_bin else ""
    if not os.path.isfile(lib):
        pytest.skip("no libkbx_probe.so beside $KBX_BIN")
    monkeypatch.setenv("KBX_PROBE_LIB", lib)
    probe = candidate_mode.LaunchSlotProbe()
    assert probe.lib is None
    assert probe.slot_arm(3, 4) is False and probe.slot_disarm() is False


class JoiningEvents(SlotEvents):
    """The supervisor's side of "cuda_next" (sandbox::Spawn::cpu_only_until_cuda): "ok" at once."""

    def join_quiet_host(self):
        self.send("cuda_next")


@pytest.mark.parametrize("join_at", ["cuda", "context"])
def test_a_candidate_says_cuda_next_before_its_code_runs(tmp_path, join_at):
    probe = "import kbx_join_probe\nkbx_join_probe.seen.append('imported')\n"
    request = dict(_request(tmp_path, True, candidate=probe + "def scale(x, factor):\n"
                            "    return x * factor\n"), quiet_join=join_at)
    import sys
    import types
    seen = []
    sys.modules["kbx_join_probe"] = types.SimpleNamespace(seen=seen)
    try:
        events = JoiningEvents()
        original = events.send

        def send(ev, **fields):
            seen.append(ev)
            original(ev, **fields)

        events.send = send
        candidate_mode.run(request, events)
    finally:
        del sys.modules["kbx_join_probe"]
    assert seen.index("static") < seen.index("cuda_next") < seen.index("imported"), seen
    assert seen.count("cuda_next") == 1
    # without quiet_join (the references, or no quiet host): no such event
    events = SlotEvents()
    candidate_mode.run(_request(tmp_path / "plain", True), events)
    assert "cuda_next" not in [e["ev"] for e in events.events]


def test_cuda_next_waits_for_ok_on_the_channel_and_exits_on_a_closed_pipe():
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    os.write(req_w, b'{"mode": "candidate"}\nok\n')
    channel = Channel(req_r, ev_w)
    channel.read_request()
    candidate_mode._join_quiet_host(channel)
    assert json.loads(os.read(ev_r, 4096).decode())["ev"] == "cuda_next"
    os.close(req_w)  # the supervisor ended the job instead
    with pytest.raises(SystemExit) as ended:
        candidate_mode._join_quiet_host(channel)
    assert ended.value.code == 3


# --slot-at early: the slot is asked for after the first edge or small case and taken between
# the later ones; those left when it came run after its hand-back (session 28: in three GPU runs
# of the 184 references the slot sat idle 30-40 s, 70-85% of it while the job that took it next
# was running its small cases, bench/slot_idle_who.py).

EARLY_REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
                Case("small_two", "small", lambda c: ((c.randn(5), 0.5), {})),
                Case("small_three", "small", lambda c: ((c.randn(3), 1.5), {})),
                Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))]
''')


class EarlySlotEvents(Events):
    """The channel stand-in of --slot-at early: the supervisor's "go" is there at the `go_at`-th
    look without waiting (never: None), and always when waited for."""

    def __init__(self, go_at):
        super().__init__()
        self.go_at, self.looks, self.waits = go_at, 0, 0

    def slot_answer(self, wait):
        if wait:
            self.waits += 1
            return True
        self.looks += 1
        return self.go_at is not None and self.looks >= self.go_at

    asked_at_call = 0

    def wait_for_slot(self):  # proto.Channel's: asks, then waits
        self.asked_at_call += 1
        self.send("slot_wanted")


def _early_order(events):
    return [e["ev"] if e["ev"] != "case" else e["case"] for e in events
            if e["ev"] in ("case", "slot_wanted", "slot_done")]


def test_early_the_slot_is_asked_after_the_first_small_case_and_the_rest_wait_for_its_end(
        tmp_path):
    request = dict(_request(tmp_path, True, reference=EARLY_REFERENCE), slot_at="early")
    events = EarlySlotEvents(go_at=1)  # there at the first look, before small_two
    candidate_mode.run(request, events)
    assert _early_order(events.events) == ["small_one", "slot_wanted", "slot_done", "perf_one",
                                           "small_two", "small_three"]
    assert events.waits == 0


def test_early_without_go_the_small_cases_run_then_the_slot_is_waited_for(tmp_path):
    request = dict(_request(tmp_path, True, reference=EARLY_REFERENCE), slot_at="early")
    events = EarlySlotEvents(go_at=None)
    candidate_mode.run(request, events)
    assert _early_order(events.events) == ["small_one", "slot_wanted", "small_two", "small_three",
                                           "slot_done", "perf_one"]
    assert events.looks == 2 and events.waits == 1  # before small_two and small_three; then waited


def test_early_gives_the_same_outputs_as_asking_at_the_call(tmp_path):
    early = dict(_request(tmp_path / "early", True, reference=EARLY_REFERENCE), slot_at="early")
    at_call = _request(tmp_path / "call", True, reference=EARLY_REFERENCE)
    candidate_mode.run(early, EarlySlotEvents(go_at=2))
    candidate_mode.run(at_call, SlotEvents())
    for case in ("small_one", "small_two", "small_three", "perf_one"):
        assert (tmp_path / "early" / "job" / f"{case}.cand.kbt").read_bytes() == (
            tmp_path / "call" / "job" / f"{case}.cand.kbt").read_bytes(), case


def test_early_with_one_small_case_asks_at_the_call(tmp_path):
    """Nothing to overlap: a job of one small case asks before its first full case, as without
    early, and waits there."""
    base = _request(tmp_path, True)
    request = dict(base, slot_at="early",
                   cases=[c for c in base["cases"] if c["name"] != "small_two"])
    events = EarlySlotEvents(go_at=1)
    candidate_mode.run(request, events)
    assert _early_order(events.events) == ["small_one", "slot_wanted", "slot_done", "perf_one"]
    assert events.looks == 0 and events.asked_at_call == 1


def test_the_early_answer_is_read_without_waiting_on_a_real_channel():
    channel, req_w, ev_r = _channel_pair()
    os.write(req_w, b'{"mode": "candidate"}\n')
    channel.read_request()
    assert candidate_mode._slot_answer(channel, wait=False) is False  # not there yet
    os.write(req_w, b"go\n")
    assert candidate_mode._slot_answer(channel, wait=False) is True
    os.write(req_w, b"no\n")
    with pytest.raises(SystemExit) as ended:
        candidate_mode._slot_answer(channel, wait=False)
    assert ended.value.code == 3
    os.close(req_w)
    with pytest.raises(SystemExit):
        candidate_mode._slot_answer(channel, wait=True)  # the supervisor ended the job


def test_early_asks_nothing_without_full_cases(tmp_path):
    base = dict(_request(tmp_path, True, reference=EARLY_REFERENCE), slot_at="early")
    request = dict(base, cases=[c for c in base["cases"] if c["tier"] != "full"])
    events = EarlySlotEvents(go_at=1)
    candidate_mode.run(request, events)
    assert _early_order(events.events) == ["small_one", "small_two", "small_three"]


@pytest.mark.parametrize("attack", ["slot_skip", "slot_handback", "slot_interim"])
def test_the_slot_attacks_turn_early_asking_off_too(tmp_path, attack):
    """tests/adversarial/timing/slot_skip and slot_handback must test the worker's own wait under
    --slot-at early as under call and launch (both timer_tampered on the GPU): with their patches
    in place the worker no longer asks during the small cases. Run in a forked child: the
    patches are the candidate's, global to its process."""
    source = (ROOT / "tests" / "adversarial" / "timing" / attack / "Activation" /
              "gelu.py").read_text() + "\n\ndef scale(x, factor):\n    return x * factor\n"
    request = dict(_request(tmp_path, True, reference=EARLY_REFERENCE, candidate=source),
                   slot_at="early")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            events = EarlySlotEvents(go_at=1)
            candidate_mode.run(request, events)
            os.write(write_end, json.dumps(_early_order(events.events)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as got:
        order = json.loads(got.read() or "null")
    assert os.waitpid(pid, 0)[1] == 0
    assert order[:4] == ["small_one", "small_two", "small_three", "slot_wanted"], order


@pytest.mark.parametrize("raised,reported", [
    ("oom", True),  # torch's OutOfMemoryError at the context's start
    ("text", True),  # "CUDA error: out of memory" as a plain RuntimeError
    ("other", False),
])
def test_a_cuda_start_out_of_memory_is_the_jobs_oom_not_a_crash(tmp_path, monkeypatch, raised,
                                                                   reported):
    """A job whose CUDA context finds the GPU's memory taken by the jobs beside it (a candidate
    holding it, tests/adversarial/sandbox/gpu_memory_hog) reports an oom error (kbx runs the job
    again alone), not an exit without "done" (crash, a verdict that would stand); any other
    failure of CUDA's start still ends the worker."""
    request = dict(_request(tmp_path, False), device="cuda")
    errors = {"oom": torch_oom(), "text": RuntimeError("CUDA error: out of memory"),
              "other": RuntimeError("CUDA driver version is insufficient")}

    def failing_empty(*args, **kwargs):
        if str(kwargs.get("device", "")).startswith("cuda"):
            raise errors[raised]
        return real_empty(*args, **kwargs)

    real_empty = candidate_mode.torch.empty
    monkeypatch.setattr(candidate_mode.torch, "empty", failing_empty)
    events = Events()
    if not reported:
        with pytest.raises(RuntimeError):
            candidate_mode.run(request, events)
        return
    assert candidate_mode.run(request, events) == 0
    errors_seen = [e for e in events.events if e["ev"] == "error"]
    assert [(e["phase"], e["kind"]) for e in errors_seen] == [("cuda", "oom")], events.events
    assert not any(e["ev"] in ("imported", "case") for e in events.events)


def torch_oom():
    import torch
    return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB.")
