"""docs/suite.md is what scripts/suite_table.py writes from the manifests and references: a task
whose cases change without the table (session 37 found 12 such rows) fails here."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_suite_table_is_up_to_date():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "suite_table.py")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    written = (ROOT / "docs" / "suite.md").read_text()
    assert proc.stdout == written, (
        "docs/suite.md is out of date: run `PYTHONPATH=python python3 scripts/suite_table.py > "
        "docs/suite.md` with the worker's Python")
