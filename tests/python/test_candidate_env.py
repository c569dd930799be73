"""The candidate's process starts under the task's TF32 rule, as the reference's does (found on
the H200: the references of the conv2d tasks, submitted as candidates, ran cuDNN in TF32,
PyTorch's default, and failed their own tasks' contract)."""

import json
import textwrap

import pytest
import torch

from standins import Events
from kbx_worker import candidate_mode, reference_mode

REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {}))]
''')

CANDIDATE = textwrap.dedent('''
    import json, os, torch
    with open(os.path.join(os.path.dirname(__file__), "switches.json"), "w") as f:
        json.dump([torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32], f)

    def scale(x, factor):
        return x * factor
''')


@pytest.mark.parametrize("tf32", [False, True])
def test_the_candidate_sees_the_tasks_tf32_rule(tmp_path, tf32):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(REFERENCE)
    events = Events()
    reference_mode.run({"device": "cpu", "jobs": [{
        "task": "T/scale", "task_dir": str(task), "entry": "scale", "seed": 5, "label": "x",
        "tiers": ["small"], "out_dir": str(tmp_path / "ref")}]}, events)
    job = tmp_path / "job"
    job.mkdir()
    (job / "scale.py").write_text(CANDIDATE)
    cases = [{"name": e["case"], "tier": e["tier"], "inputs": str(tmp_path / "ref" / f"{e['case']}.in.kbt"),
              "call": e["call"], "out_prefix": str(job / e["case"])}
             for e in events.events if e["ev"] == "case"]
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not tf32
    try:
        candidate_mode.run({"mode": "candidate", "device": "cpu", "candidate": str(job / "scale.py"),
                            "entry": "scale", "task_dir": str(task), "track": "any", "cases": cases,
                            "time": False, "tf32": tf32}, Events())
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert json.loads((job / "switches.json").read_text()) == [tf32, tf32]
