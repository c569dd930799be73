"""bench/host_bound_apart.py: the host_loop_ms of a reference's eager timing and of its candidate's,
read from a profile log, and a run's cases summed by the kind of call."""
import importlib.util
import pathlib
import sqlite3
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "host_bound_apart.py"
spec = importlib.util.spec_from_file_location("host_bound_apart", SCRIPT)
host_bound_apart = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_bound_apart)

LOG = """\
kbx: reference LinearAlgebra/qr perf_a (full): 0.5 s call=0.01 eager=0.2 eager_host_loop_ms=0.250 make=0.01
kbx: reference LinearAlgebra/qr perf_b (full): 0.5 s call=0.01 eager=0.2 make=0.01
kbx: reference LinearAlgebra/qr small_c (small): 0.1 s call=0.01
kbx: LinearAlgebra/qr: timeline: before spawn 0.00 s | 0.10 hello | 7.64 timing perf_a seconds=0.30 samples=10 host_loop_ms=0.431 | 7.90 timing perf_b seconds=0.2 samples=10 | 8.44 case perf_a call_s=0.26
"""


def test_the_log_pairs_each_waiting_case_eager_with_candidate(tmp_path):
    log = tmp_path / "profile.log"
    log.write_text(LOG)
    eager, cand = host_bound_apart._host_loops(str(log))
    assert eager == {("LinearAlgebra/qr", "perf_a"): 0.25}  # perf_b's eager did not wait
    assert cand == {("LinearAlgebra/qr", "perf_a"): 0.431}


def _db(path, cases):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE results(id INTEGER PRIMARY KEY, run_id INTEGER, task TEXT)")
    con.execute("CREATE TABLE case_results(result_id INTEGER, name TEXT, cand_ms REAL, "
                "eager_ms REAL, timing_flags TEXT)")
    for k, (run, task, name, cand, eager, flags) in enumerate(cases):
        con.execute("INSERT INTO results VALUES (?, ?, ?)", (k + 1, run, task))
        con.execute("INSERT INTO case_results VALUES (?, ?, ?, ?, ?)",
                    (k + 1, name, cand, eager, flags))
    con.commit()


def test_a_run_is_summed_by_kind_and_against_the_host_speed(tmp_path):
    db, log = tmp_path / "r.db", tmp_path / "profile.log"
    log.write_text(LOG.replace("perf_b (full): 0.5 s call=0.01 eager=0.2 make",
                               "perf_b (full): 0.5 s call=0.01 eager=0.2 eager_host_loop_ms=0.26 make")
                   .replace("perf_b seconds=0.2 samples=10", "perf_b seconds=0.2 samples=10 "
                            "host_loop_ms=0.26")
                   + "kbx: reference LinearAlgebra/qr perf_d (full): 0.5 s eager_host_loop_ms=0.3\n"
                   + "kbx: LinearAlgebra/qr: timeline: 1.0 timing perf_d seconds=0.1 "
                     "host_loop_ms=0.3\n")
    _db(db, [(1, "LinearAlgebra/qr", "perf_a", 1.5, 1.0, "waits_on_host,host_bound"),
             (1, "LinearAlgebra/qr", "perf_b", 1.0, 1.02, "waits_on_host,host_bound"),
             (1, "LinearAlgebra/qr", "perf_d", 1.0, 1.0, "waits_on_host"),
             (1, "Math/add", "perf_e", 1.0, 1.01, "")])
    out = subprocess.run([sys.executable, str(SCRIPT), str(db), "--log", str(log)],
                         capture_output=True, text=True, check=True).stdout
    assert "run 1 host_bound     n=   2" in out and "over 8%: 1" in out  # perf_a, 1.5x apart
    assert "run 1 other          n=   1" in out
    assert "3 waiting cases" in out
    # perf_a's host was 1.72x slower for its candidate: the one case apart by more than 20%
    assert "apart by more than 20%  n=   1" in out and "within 20%              n=   2" in out
