"""Worker processes are named for their mode (kbx-reference, kbx-candidate, kbx-judge): warm
parents fork them all from one command line, and a sampler of the GPU's processes
(bench/gpu_mem_by_role.py) tells them apart by /proc/PID/comm."""
import json
import os
import pathlib
import subprocess
import sys

import kbx_worker
import kbx_worker.__main__ as worker_main

PYTHONPATH = str(pathlib.Path(kbx_worker.__file__).parent.parent)


def test_a_process_takes_its_modes_name():
    code = ("from kbx_worker.__main__ import name_process\n"
            "assert name_process('candidate')\n"
            "print(open('/proc/self/comm').read().strip())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=PYTHONPATH)).stdout
    assert out.strip() == "kbx-candidate"


def test_the_worker_names_itself_from_its_request(monkeypatch):
    named = []
    monkeypatch.setattr(worker_main, "name_process", named.append)
    monkeypatch.setattr(worker_main, "_hello", lambda channel, request: None)
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    with os.fdopen(req_w, "w") as f:
        f.write(json.dumps({"mode": "hello"}) + "\n")
    assert worker_main.main(["--request-fd", str(req_r), "--event-fd", str(ev_w)]) == 0
    with os.fdopen(ev_r) as f:
        assert '"ev": "done"' in f.read().replace('"ev":"done"', '"ev": "done"')
    assert named == ["hello"]
