"""bench/two_states.py: the references against themselves case by case, the cases whose eager and
candidate times sit far apart counted by the slower side, the host-following ones left out."""
import pathlib
import sqlite3
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "two_states.py"


def _db(path, rows):
    """A results database: rows of (task, case, cand_ms, eager_ms, flags)."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE results(id INTEGER PRIMARY KEY, task TEXT);"
        "CREATE TABLE case_results(result_id INTEGER, name TEXT, cand_ms REAL, eager_ms REAL, "
        "timing_flags TEXT);")
    for k, (task, case, cand, eager, flags) in enumerate(rows, start=1):
        db.execute("INSERT INTO results VALUES(?,?)", (k, task))
        db.execute("INSERT INTO case_results VALUES(?,?,?,?,?)", (k, case, cand, eager, flags))
    db.commit()
    return str(path)


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_far_cases_are_counted_by_the_slower_side_and_host_following_ones_left_out(tmp_path):
    a = _db(tmp_path / "a.db", [
        ("A/relu", "perf_64M", 0.090, 0.1056, "no_floor"),        # eager 17% slower
        ("M/sub", "perf_bf16", 0.134, 0.1340, "no_floor"),        # the same
        ("I/scatter", "perf_dim0", 1.585, 1.4375, ""),            # candidate 10% slower
        ("L/det", "perf_b8", 3.574, 4.0959, "eager_launch_gaps"),  # follows the host: out
        ("I/masked", "perf", 1.0, 1.5, "waits_on_host"),           # out
        ("A/gelu", "small", 0.0, 0.0, ""),                         # untimed: out
    ])
    b = _db(tmp_path / "b.db", [("M/div", "perf_bf16", 0.134, 0.1566, "")])
    out = _run(a, b)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert f"{a}: 3 timed cases, 2 apart, the eager side slower in 1, the candidate's in 1" in lines
    assert "  A/relu perf_64M: candidate 0.0900 ms, eager 0.1056 ms, ratio 1.173" in lines
    assert "  I/scatter perf_dim0: candidate 1.5850 ms, eager 1.4375 ms, ratio 0.907" in lines
    assert not any("L/det" in line or "I/masked" in line or "M/sub" in line for line in lines)
    assert "all: 4 timed cases, 3 apart, the eager side slower in 2, the candidate's in 1" in lines
    tight = _run("--apart", "0.2", a)
    assert f"{a}: 3 timed cases, 0 apart, the eager side slower in 0, the candidate's in 0" \
        in tight.stdout.splitlines()


def test_a_file_that_is_no_result_database_is_named_in_the_error(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not sqlite")
    out = _run(str(bad))
    assert out.returncode == 2
    assert str(bad) in out.stderr and "a kbx result database?" in out.stderr
