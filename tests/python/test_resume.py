"""A killed `kbx eval` loses no finished result, and rerunning the command completes the rest."""

import json
import os
import signal
import sqlite3
import subprocess
import time

from conftest import ROOT, kbx_binary

TASKS = "Activation/gelu,Math/add,Math/softmax"


def _rows(db):
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=10) as con:
            return con.execute("SELECT id, task, status FROM results ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []


def test_kill_minus_9_then_resume(kbx, tmp_path):
    db = tmp_path / "k.db"
    args = [kbx_binary(), "eval", "--method", "expert", "--candidates",
            str(ROOT / "solutions" / "expert"), "--device", "cpu", "--db", str(db),
            "--tasks", TASKS, "--work", str(tmp_path / "work")]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 600
    while time.time() < deadline and not _rows(db):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = _rows(db)
    assert 1 <= len(first) < 3, f"kill landed too late to test resume: {first}"

    rerun = kbx(*args[1:], check=True)
    assert "resuming run" in rerun.stderr
    final = _rows(db)
    assert len(final) == 3
    assert final[: len(first)] == first  # finished results survived untouched
    assert all(status == "passed" for _, _, status in final)

    again = kbx(*args[1:], check=True)
    assert "already have results" in again.stderr
    assert _rows(db) == final
