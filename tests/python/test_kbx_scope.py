"""The kbx-level markers (compat.kbx_cases) of every task are what scripts/kbx_scope.py derives
from KernelBenchX's own test inputs."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
JSONL = ROOT.parent / "shared" / "kernelbenchx-v1-test-inputs.jsonl"


@pytest.mark.skipif(not JSONL.exists(), reason="kernelbenchx-v1-test-inputs.jsonl not present")
def test_kbx_cases_are_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "kbx_scope.py"), "--check",
                           "--jsonl", str(JSONL)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
