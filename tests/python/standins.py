"""Stand-ins for the worker's channel and CUDA timer, for testing worker modes on the CPU."""

# A task's reference with one small and one full case: x * factor
SCALE_REFERENCE = """
import torch
from kbx_worker.casegen import Case

def scale(x, factor):
    return x * factor

def cases():
    return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
            Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))]
"""

# its task.toml, for a suite of such tasks (name: the task's)
SCALE_TOML = '''schema = 1
name = "{name}"
category = "Math"
entry = "scale"
signature = "scale(x, factor)"
set = "extra"
summary = """Return x times factor, elementwise: x is a float32 tensor of any shape and factor a Python
number. The result has the shape and dtype of x; x itself is left unchanged by the call."""

[contract]
dtypes = ["float32"]
tolerance = "shadow"
ratio = 10.0
ulp_floor = 4.0
'''


class Events:
    """Collects what a worker mode sends, as the supervisor would receive it."""

    def __init__(self):
        self.events = []

    def send(self, ev, **fields):
        self.events.append(dict(fields, ev=ev))


class StandInTimer:
    """CudaTimer's interface without CUDA: `reps` calls, before_each(i) before each and
    after_each(i, result) after each, and `ms` per call reported."""

    class _Probe:
        active = False

    def __init__(self, reps=4, ms=1.0):
        self.probe = self._Probe()
        self.last_ids = []
        self.last_host_ms = []
        self.reps = reps
        self.ms = ms
        self.calls = 0

    def run(self, fn, before_each=None, after_each=None):
        for i in range(self.reps):
            if before_each:
                before_each(i)
            result = fn()
            if after_each:
                after_each(i, result)
            self.calls += 1
        self.last_ids = [0] * self.reps
        self.last_host_ms = [self.ms / 10] * self.reps
        # what CudaTimer says of its steps, in seconds (samples: a count)
        self.last_batches, self.last_short_holds = 3, 1  # batches, and those that outran the hold
        self.last_phases = {"estimate": 0.25, "batches": 0.5, "holds": 0.0625, "flush": 0.125,
                            "samples": self.reps}
        return [self.ms] * self.reps

    def end_quiet(self):
        """No quiet host here: nothing to end (CudaTimer.end_quiet)."""
        self.quiet_ends = getattr(self, "quiet_ends", 0) + 1


def run_reference(tmp_path, text, task, entry, tiers, **job):
    """Runs the reference worker on the CPU over a task whose reference.py is `text`; returns
    (its output folder, its case events by case name). job: more fields of the job."""
    from kbx_worker import reference_mode

    task_dir = tmp_path / "task"
    task_dir.mkdir(parents=True)
    (task_dir / "reference.py").write_text(text)
    out = tmp_path / "ref"
    events = Events()
    reference_mode.run({"device": "cpu", "jobs": [dict({
        "task": task, "task_dir": str(task_dir), "entry": entry, "seed": 5, "label": "x",
        "tiers": tiers, "out_dir": str(out)}, **job)]}, events)
    return out, {e["case"]: e for e in events.events if e["ev"] == "case"}


def reference_events(tmp_path, timer, **job):
    """Runs the reference worker on the CPU over SCALE_REFERENCE's small and full cases with a
    stand-in eager timer; returns every event it sent. job: more fields of the job."""
    from kbx_worker import reference_mode

    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(SCALE_REFERENCE)
    events = Events()
    reference_mode.run({"device": "cpu", "jobs": [dict({
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "ref",
        "tiers": ["small", "full"], "out_dir": str(tmp_path / "out")}, **job)]}, events,
        timer=timer)
    return events.events


def run_candidate(tmp_path, out, cases, source, entry="scale"):
    """Runs a candidate's worker on the CPU over the cases a reference run gave (run_reference),
    as the supervisor asks it: no inputs path for a case whose reference kept no file. Returns
    (its events, its job folder)."""
    from kbx_worker import candidate_mode

    job = tmp_path / "job"
    job.mkdir()
    cand = job / f"{entry}.py"
    cand.write_text(source)
    request_cases = []
    for ev in cases.values():
        c = {"name": ev["case"], "tier": ev["tier"], "call": ev["call"],
             "out_prefix": str(job / ev["case"]), "digest": ev["digest"],
             "case_seed": ev["case_seed"]}
        if ev["in_file"]:
            c["inputs"] = str(out / f"{ev['case']}.in.kbt")
        request_cases.append(c)
    events = Events()
    candidate_mode.run({"mode": "candidate", "device": "cpu", "candidate": str(cand),
                        "entry": entry, "task_dir": str(tmp_path / "task"), "track": "any",
                        "cases": request_cases, "time": False}, events)
    return events.events, job
