"""End to end through `kbx eval --device cpu`: planted candidates get the right verdicts."""

import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "candidates"

# fixture folder -> (track, expected status)
EXPECTED = {
    "correct_triton": ("triton", "passed"),
    "prints_megabytes": ("triton", "passed"),
    "wrong": ("triton", "numerical_mismatch"),
    "pure_torch": ("triton", "static_reject"),
    "pure_torch_any": ("any", "passed"),
    "hang": ("triton", "timeout"),
    "os_exit": ("triton", "crash"),
    "segfault": ("triton", "crash"),
    "no_entry": ("triton", "no_entry"),
    "non_utf8": ("triton", "bad_input"),
    "syntax_error": ("triton", "syntax_error"),
    "mutates_input": ("triton", "input_mutation"),
    "compile_error": ("triton", {"compile_error", "runtime_error"}),
}


def _suite(tmp, names):
    """A suite of Activation/gelu under one name per planted candidate (gelu_<name>), so that
    one kbx eval judges them all: kbx takes one candidate per task and method."""
    src = ROOT / "tasks" / "Activation" / "gelu"
    for name in names:
        task = tmp / "suite" / "Activation" / f"gelu_{name}"
        task.mkdir(parents=True)
        (task / "reference.py").write_text((src / "reference.py").read_text())
        toml = (src / "task.toml").read_text()
        assert 'name = "gelu"' in toml
        (task / "task.toml").write_text(toml.replace('name = "gelu"', f'name = "gelu_{name}"', 1))
        cand = tmp / "candidates" / "Activation" / f"gelu_{name}.py"
        cand.parent.mkdir(parents=True, exist_ok=True)
        cand.write_bytes((FIXTURES / name.replace("_any", "") / "Activation" / "gelu.py")
                         .read_bytes())
    return tmp / "suite", tmp / "candidates"


def _evaluate(kbx, tmp, names, track, timeout):
    """One kbx eval of the planted candidates `names`: {name: (the eval's process, its row)}."""
    suite, cands = _suite(tmp, names)
    db = tmp / "planted.db"
    proc = kbx("--suite", str(suite), "eval", "--method", "planted", "--candidates", str(cands),
               "--device", "cpu", "--track", track, "--db", str(db), "--timeout", timeout,
               "--work", str(tmp / "work"))
    res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json")
    rows = json.loads(res.stdout)["results"] if res.returncode == 0 else []
    return {name: (proc, [r for r in rows if r["task"] == f"Activation/gelu_{name}"])
            for name in names}


@pytest.fixture(scope="module")
def verdicts(kbx, tmp_path_factory):
    """Three evals side by side: the triton-track candidates together (30 s each: room on a
    loaded machine), the hang alone (it spins until killed: 5 s show the timeout as well as 30
    would), and the one of track any."""
    triton = [n for n, (track, _) in EXPECTED.items() if track == "triton" and n != "hang"]
    groups = [(triton, "triton", "30"), (["hang"], "triton", "5"), (["pure_torch_any"], "any", "30")]
    assert sum(len(g) for g, _, _ in groups) == len(EXPECTED)
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        futures = [pool.submit(_evaluate, kbx, tmp_path_factory.mktemp("planted"), *g)
                   for g in groups]
        return {name: got for f in futures for name, got in f.result().items()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_planted_candidate_verdict(verdicts, name):
    proc, rows = verdicts[name]
    assert len(rows) == 1, f"expected one result row\n{proc.stdout}\n{proc.stderr}"
    expected = EXPECTED[name][1]
    expected = expected if isinstance(expected, set) else {expected}
    assert rows[0]["status"] in expected, rows[0]


def test_wrong_candidate_reports_error_ratio(verdicts):
    _, rows = verdicts["wrong"]
    assert rows[0]["error_ratio"] == "inf" or rows[0]["error_ratio"] > 10
    assert "error ratio" in rows[0]["detail"] or "flat index" in rows[0]["detail"]


def test_hang_is_killed_and_run_continues(verdicts):
    proc, rows = verdicts["hang"]
    assert proc.returncode == 0, proc.stderr  # a timeout is a verdict, not a kbx failure
    assert "killed" in rows[0]["detail"]


def test_megabytes_of_output_do_not_break_the_protocol(verdicts):
    _, rows = verdicts["prints_megabytes"]
    assert rows[0]["cases_passed"] == rows[0]["cases_total"]


def test_bad_inputs_print_one_clear_line(verdicts):
    proc, _ = verdicts["non_utf8"]
    assert "not valid UTF-8" in proc.stderr


def test_a_source_of_more_than_a_mebibyte_is_bad_input_and_is_not_stored_whole(kbx, tmp_path):
    """A candidate file of 3 MiB (a right kernel padded with comments: a generation that ran
    away, or a file planted to fill kbx's memory and database) is bad_input, said in one line,
    and the database keeps at most a mebibyte and a byte of it; the same through JSONL."""
    right = (FIXTURES / "correct_triton" / "Activation" / "gelu.py").read_text()
    padded = right + ("# " + "x" * 1022 + "\n") * 3072
    suite, cands = _suite(tmp_path, ["correct_triton"])
    (cands / "Activation" / "gelu_correct_triton.py").write_text(padded)
    jsonl = tmp_path / "cands.jsonl"
    jsonl.write_text(json.dumps({"file": "Activation/gelu_correct_triton.py",
                                 "predict": padded}) + "\n")
    for method, given in (("big", cands), ("bigjsonl", jsonl)):
        db = tmp_path / f"{method}.db"
        proc = kbx("--suite", str(suite), "eval", "--method", method, "--candidates", str(given),
                   "--device", "cpu", "--track", "triton", "--db", str(db), "--work",
                   str(tmp_path / "work"))
        assert proc.returncode == 0, proc.stderr
        assert f"{len(padded)} bytes, more than the 1048576" in proc.stderr, proc.stderr
        res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json")
        rows = json.loads(res.stdout)["results"]
        assert [r["status"] for r in rows] == ["bad_input"], rows
        assert "more than 1048576 bytes" in rows[0]["detail"], rows
        with sqlite3.connect(db) as con:
            (stored,) = con.execute("SELECT max(length(source)) FROM candidates").fetchone()
        assert stored == 1048577
