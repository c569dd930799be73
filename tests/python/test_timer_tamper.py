"""The worker's timer keeps the timing functions it started with and names replaced ones."""

import subprocess
import sys

from conftest import ROOT


def test_replaced_timing_functions_are_named_and_not_used():
    code = ("import sys; sys.path.insert(0, 'python'); from kbx_worker import timer; "
            "import torch, time; assert timer.tampered() == []; "
            "torch.cuda.Event.elapsed_time = lambda s, e: 0.0; time.perf_counter = lambda: 0.0; "
            "print(sorted(timer.tampered())); "
            "print(timer._ORIGINALS['torch.cuda.Event.elapsed_time'] is not torch.cuda.Event.elapsed_time)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "['time.perf_counter', 'torch.cuda.Event.elapsed_time']"
    assert lines[1] == "True"
