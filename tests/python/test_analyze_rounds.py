"""Rounds and samples end to end (issue 15): `kbx import` of JSONL lines with "round", "sample" and
"worker", `kbx eval` of every stored round and sample on the CPU, and `kbx analyze` counting a
kernel rescued by refinement."""

import json

from conftest import ROOT


def test_rescued_kernel_through_import_eval_and_analyze(kbx, tmp_path):
    expert = (ROOT / "solutions" / "expert" / "Activation" / "gelu.py").read_text()
    wrong = "def gelu(x):\n    return x\n"  # no @triton.jit: static_reject on the triton track
    lines = [
        {"file": "Activation/gelu.py", "predict": wrong, "round": 1, "sample": 0, "worker": "w0"},
        {"file": "Activation/gelu.py", "predict": expert, "round": 2, "sample": 0, "worker": "w0"},
        {"file": "Activation/gelu.py", "predict": expert, "round": 1, "sample": 1, "worker": "w1"},
    ]
    jsonl = tmp_path / "rounds.jsonl"
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = str(tmp_path / "rounds.db")
    imported = kbx("import", "kernelbenchx", str(jsonl), "--method", "agent", "--db", db,
                   check=True)
    assert "imported 3 candidates" in imported.stdout
    kbx("eval", "--method", "agent", "--db", db, "--device", "cpu", "--tasks", "Activation/gelu",
        "--timeout", "120", "--work", str(tmp_path / "work"), check=True)
    doc = json.loads(kbx("analyze", "--db", db, "--analysis", "refinement", "--format", "json",
                         check=True).stdout)
    tables = {t["name"]: t["rows"] for t in doc["tables"]}
    rounds = {r["round"]: r for r in tables["refinement"]}
    assert rounds[1]["kernels"] == 2 and rounds[1]["correct_rate"] == 0.5
    assert rounds[2]["correct_rate"] == 1.0  # sample 1 carries its round-1 kernel forward
    classes = {r["class"]: r["kernels"] for r in tables["refinement_rescued"]}
    assert classes == {"correct from the first round": 1, "rescued by refinement": 1,
                       "never correct": 0}
