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


def _suite_with_judge(tmp_path, judge_prefix):
    """A suite of the one task, its judge() preceded by `judge_prefix` (code run first)."""
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "tasks" / TASK, suite / TASK)
    ref = suite / TASK / "reference.py"
    text = ref.read_text()
    head = "def judge(args, kwargs, out_a, out_b):\n"
    assert head in text
    ref.write_text(text.replace(head, head + judge_prefix, 1))
    return suite, text


def test_a_judge_out_of_gpu_memory_is_kbxs_fault_not_the_candidates(kbx, tmp_path):
    """Session 34 on the H100: the judge of an honest candidate's random case ran out of the
    GPU's memory beside other jobs, and the candidate got random_contract. It is a harness
    error (not a verdict; the job runs again); any other failure of the judge still fails the
    contract."""
    rows = {}
    for name, error in (("oom", "RuntimeError('CUDA error: out of memory')"),
                        ("other", "ValueError('not memory')")):
        suite, original = _suite_with_judge(tmp_path / name, f"    raise {error}\n")
        cands = tmp_path / name / "cands" / "Fusion"
        cands.mkdir(parents=True)
        (cands / "fused_hardshrink_dropout.py").write_text(original)
        db = tmp_path / name / "k.db"
        kbx("--suite", str(suite), "eval", "--method", "m", "--candidates",
            str(tmp_path / name / "cands"), "--device", "cpu", "--track", "any", "--db", str(db),
            "--work", str(tmp_path / name / "w"))
        out = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json",
                  check=True)
        rows[name] = json.loads(out.stdout)["results"][0]
    assert rows["oom"]["status"] == "harness_error", rows["oom"]
    assert "ran out of the GPU's memory" in json.dumps(rows["oom"]), rows["oom"]
    assert rows["other"]["status"] == "random_contract", rows["other"]


def test_a_second_draw_that_declares_terabytes_fails_the_contract(kbx, tmp_path):
    """tests/adversarial/verdict/random_second_draw: a failing candidate rewrites its second
    draw's file to declare 2**40 elements, so that the judge's allocation fails (an oom: kbx's
    fault, a harness_error that is no verdict). Its contract fails all the same."""
    attack = ROOT / "tests" / "adversarial" / "verdict" / "random_second_draw"
    source = (attack / TASK).with_suffix(".py").read_text()
    row = _status(kbx, tmp_path, "second_draw", source)
    assert row["status"] == "random_contract", row
    assert "cand2.kbt: truncated tensor" in json.dumps(row), row  # not an out-of-memory
