"""Random cases end to end: the judge runs in its own process; the task's own reference, used as
a candidate, passes its statistical contract, and a candidate that never drops anything fails."""

import json
import shutil

from conftest import ROOT

TASK = "Fusion/fused_hardshrink_dropout"


def _status(kbx, tmp_path, name, source):
    folder = tmp_path / name / "Fusion"
    folder.mkdir(parents=True)
    (folder / "fused_hardshrink_dropout.py").write_text(source)
    db = tmp_path / f"{name}.db"
    kbx("eval", "--method", name, "--candidates", str(tmp_path / name), "--device", "cpu",
        "--track", "any", "--tasks", TASK, "--db", str(db), "--work", str(tmp_path / "w"),
        check=True)
    rows = json.loads(kbx("results", "--db", str(db), "--format", "json").stdout)["results"]
    return rows[0]


def test_reference_as_candidate_passes_random_cases(kbx, tmp_path):
    source = (ROOT / "tasks" / TASK / "reference.py").read_text()
    row = _status(kbx, tmp_path, "refcopy", source)
    assert row["status"] == "passed", row
    assert any(c["name"] for c in row["cases"])


def test_no_dropout_fails_the_random_contract(kbx, tmp_path):
    source = (ROOT / "tasks" / TASK / "reference.py").read_text()
    source += ("\n\n_kbx_original = fused_hardshrink_dropout\n\n\n"
               "def fused_hardshrink_dropout(input, p=0.5, training=True, inplace=False, lambd=0.5):\n"
               "    # planted: right for p = 0 and p = 1, but never drops anything in between\n"
               "    keep_training = training and not 0 < p < 1\n"
               "    return _kbx_original(input, p, keep_training, inplace, lambd)\n")
    row = _status(kbx, tmp_path, "nodrop", source)
    assert row["status"] == "random_contract", row
