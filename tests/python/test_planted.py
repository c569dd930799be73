"""End to end through `kbx eval --device cpu`: planted candidates get the right verdicts."""

import json
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


def _evaluate(kbx, tmp_path, name, track):
    folder = FIXTURES / name.replace("_any", "")
    db = tmp_path / f"{name}.db"
    # The hang spins until it is killed: 5 s of that show the timeout as well as 30 would, while
    # the others keep 30 s of room on a loaded machine.
    timeout = "5" if name == "hang" else "30"
    proc = kbx("eval", "--method", name, "--candidates", str(folder), "--device", "cpu",
               "--track", track, "--db", str(db), "--tasks", "Activation/gelu",
               "--timeout", timeout, "--work", str(tmp_path / "work"))
    res = kbx("results", "--db", str(db), "--format", "json")
    rows = json.loads(res.stdout)["results"] if res.returncode == 0 else []
    return proc, rows


@pytest.fixture(scope="module")
def verdicts(kbx, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("planted")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_evaluate, kbx, tmp, name, track)
                   for name, (track, _) in EXPECTED.items()}
        return {name: f.result() for name, f in futures.items()}


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
