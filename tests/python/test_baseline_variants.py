"""A full case's baselines are timed on the value variants a candidate's timed calls get (the
case's own values, its fresh twin's, two decoys from the generator, in rounds), so that both
sides of a speedup time the same work where a call's speed follows its values or the call
updates its inputs. Stand-in timers on the CPU."""

import torch

from standins import Events, SCALE_REFERENCE, StandInTimer
from kbx_worker import reference_mode
from kbx_worker.argcodec import encode_call
from kbx_worker.calls import DECOYS, build_inputs, decoy_seed
from kbx_worker.casegen import Case, Ctx


def _case():
    return Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))


def _events(case, seed, factor=3.0):
    args, kwargs = case.make(Ctx(seed, "cpu"))
    call, _ = encode_call([args[0], factor], kwargs)
    return {"case_seed": seed, "call": call}


def test_the_baseline_sees_the_same_values_as_a_candidates_timed_calls():
    case = _case()
    ev, twin_ev = _events(case, 11), _events(case, 22)
    args, kwargs = case.make(Ctx(11, "cpu"))
    args = list(args)
    own = args[0].clone()
    before_each = reference_mode._variant_loads({}, case, ev, twin_ev, args, kwargs, "cpu")
    assert before_each is not None
    seen = []
    for i in range(4 * (2 + DECOYS)):
        before_each(i)
        seen.append(args[0].clone())
    # what a candidate's worker loads: its own values, the twin's, the decoys of decoy_seed
    expected = [own, build_inputs(case.make, 22, "cpu", False)["arg0"]]
    expected += [build_inputs(case.make, decoy_seed(22, k), "cpu", False)["arg0"]
                 for k in range(DECOYS)]
    for values in seen:
        assert any(torch.equal(values, e) for e in expected)
    for e in expected:  # every variant, in every round of 2 + DECOYS calls
        assert sum(torch.equal(values, e) for values in seen) == 4
    assert not torch.equal(seen[0], own)  # never the warm-up's values first


def test_no_variants_where_a_candidates_calls_get_none():
    case = _case()
    args, kwargs = case.make(Ctx(11, "cpu"))
    ev = _events(case, 11)
    assert reference_mode._variant_loads({}, case, ev, None, list(args), kwargs, "cpu") is None
    # the twin's call differs in a scalar (as logspace's bounds): its values cannot be written in
    other_call = _events(case, 22, factor=4.0)
    assert reference_mode._variant_loads({}, case, ev, other_call, list(args), kwargs,
                                         "cpu") is None
    # an expanded view cannot take values in place
    expanded = [torch.zeros(1).expand(64), 3.0]
    assert reference_mode._variant_loads({}, case, ev, _events(case, 22), expanded, {},
                                         "cpu") is None


class RecordingTimer(StandInTimer):
    def __init__(self):
        super().__init__(reps=8, ms=1.0)
        self.given = []

    def run(self, fn, before_each=None, after_each=None):
        self.given.append(before_each is not None)
        return super().run(fn, before_each, after_each)


def test_the_reference_worker_times_a_case_with_a_twin_on_the_variants(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(SCALE_REFERENCE)
    events, timer = Events(), RecordingTimer()
    reference_mode.run({"device": "cpu", "jobs": [{
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "ref",
        "tiers": ["small", "full"], "out_dir": str(tmp_path / "out"), "fresh_twin": True}]},
        events, timer=timer)
    full = [e for e in events.events if e["ev"] == "case" and e.get("case") == "perf_one"]
    assert len(full) == 1 and full[0]["eager_ms"], events.events
    assert full[0]["phases"]["variants"] == 1.0
    assert timer.given == [True]
