"""bench/compare_runs.py: repeatability over several pairs of result databases at once, with the
tasks whose speedups follow the host (flags waits_on_host, launch_gaps and their eager_ forms, as
kbx results' ~) summed apart from the rest, and a clear error for an odd number of databases."""
import json
import pathlib
import sqlite3
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "compare_runs.py"


def _db(path, rows):
    """A results database with one run: rows of (task, speedup, case, cand_ms, flags)."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE runs(id INTEGER PRIMARY KEY);"
        "CREATE TABLE results(id INTEGER PRIMARY KEY, run_id INTEGER, task TEXT, speedup REAL);"
        "CREATE TABLE case_results(result_id INTEGER, name TEXT, cand_ms REAL, timing_flags TEXT);"
        "INSERT INTO runs VALUES(1);")
    for k, (task, speedup, case, cand_ms, flags) in enumerate(rows, start=1):
        db.execute("INSERT INTO results VALUES(?,1,?,?)", (k, task, speedup))
        db.execute("INSERT INTO case_results VALUES(?,?,?,?)", (k, case, cand_ms, flags))
    db.commit()
    return str(path)


def _run(*dbs):
    return subprocess.run([sys.executable, str(SCRIPT), *dbs], capture_output=True, text=True)


def test_pairs_are_compared_as_one_set_with_host_waiting_tasks_apart(tmp_path):
    a1 = _db(tmp_path / "a1.db", [("I/masked", 2.0, "perf", 1.0, "waits_on_host,no_floor"),
                                  ("A/relu", 1.0, "perf", 1.0, "host_bound")])
    b1 = _db(tmp_path / "b1.db", [("I/masked", 2.2, "perf", 1.1, "no_floor"),
                                  ("A/relu", 1.01, "perf", 1.0, "")])
    a2 = _db(tmp_path / "a2.db", [("N/eig", 3.0, "perf", 1.0, "eager_waits_on_host"),
                                  ("L/qr", 2.0, "perf", 1.0, "")])
    b2 = _db(tmp_path / "b2.db", [("N/eig", 3.0, "perf", 1.0, ""),
                                  ("L/qr", 2.04, "perf", 1.0, "eager_launch_gaps,no_floor")])
    out = _run(a1, b1, a2, b2)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "speedup |log ratio|: median 1.49%, max 9.53% (I/masked), n=4" in lines
    # both host-waiting tasks and the one whose eager calls waited for their launches, from
    # either database and either side; host_bound (launch-bound, queued) is not one of them
    assert "  tasks whose speedup follows the host (~): median 1.98%, max 9.53% " \
           "(I/masked), n=3" in lines
    assert "  the other tasks: median 1.00%, max 1.00% (A/relu), n=1" in lines
    assert any(line.startswith("case cand_ms |log ratio|") and "n=4" in line for line in lines)


def test_an_odd_number_of_databases_is_refused_with_the_reason(tmp_path):
    a = _db(tmp_path / "a.db", [("A/relu", 1.0, "perf", 1.0, "")])
    out = _run(a)
    assert out.returncode != 0
    assert "they go in pairs" in out.stderr


def _with_host(path, cpu, loop_ms):
    """Gives the database's run an environment as kbx records it (cpu, cpus, host_loop_ms)."""
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE runs ADD COLUMN environment TEXT")
    db.execute("UPDATE runs SET environment=?",
               (json.dumps({"cpu": cpu, "cpus": 4, "host_loop_ms": loop_ms, "gpu": "H100"}),))
    db.commit()
    return path


def test_each_runs_host_is_printed_where_its_environment_records_it(tmp_path):
    rows = [("A/relu", 1.0, "perf", 1.0, "")]
    fast = _with_host(_db(tmp_path / "fast.db", rows), "Xeon A", 0.209)
    slow = _with_host(_db(tmp_path / "slow.db", rows), "Xeon B", 0.451)
    out = _run(fast, slow)
    assert out.returncode == 0, out.stderr
    hosts = [line for line in out.stdout.splitlines() if line.startswith("host of ")]
    assert hosts == [f"host of {fast}: Xeon A, 4 CPUs, host_loop_ms at start 0.209",
                     f"host of {slow}: Xeon B, 4 CPUs, host_loop_ms at start 0.451"]
    # a run recorded before the host's facts were (no column): nothing said of it
    old = _db(tmp_path / "old.db", rows)
    out = _run(fast, old)
    assert out.returncode == 0, out.stderr
    hosts = [line for line in out.stdout.splitlines() if line.startswith("host of ")]
    assert hosts == [f"host of {fast}: Xeon A, 4 CPUs, host_loop_ms at start 0.209"]
