"""tests/adversarial/sandbox/gpu_memory_hog on the GPU machine (bench/sandbox_gpu.sh runs it with
KBX_ADVERSARIAL_DEVICE=cuda; skipped on the CPU, which has no shared GPU memory): a candidate that
takes all of the GPU's free memory for 20 s passes (its answers are right), and the other tasks
of the run, whose references and jobs meet its hold (among them a reference with a 32 GiB float64
shadow), get what they get without it: passed. Before session 29's change an honest reference
that ran out of GPU memory beside other jobs was a reference_error."""
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOG = ROOT / "tests" / "adversarial" / "sandbox" / "gpu_memory_hog"
DEVICE = os.environ.get("KBX_ADVERSARIAL_DEVICE", "cpu")
# tasks beside the hog, their references as candidates; fused_pairwise_distance_normalize's
# reference holds a 32 GiB float64 shadow
BESIDE = ("Fusion/fused_pairwise_distance_normalize", "Math/add", "Activation/gelu",
          "MatrixMultiply/matmul", "Normalization/batch_norm")


@pytest.mark.skipif(DEVICE != "cuda", reason="needs the GPU machine (KBX_ADVERSARIAL_DEVICE=cuda)")
def test_a_candidate_holding_the_gpus_memory_spoils_no_other_task(kbx, tmp_path):
    cands = tmp_path / "cands"
    (cands / "Activation").mkdir(parents=True)
    (cands / "Activation" / "relu.py").write_text((HOG / "Activation" / "relu.py").read_text())
    for task in BESIDE:
        (cands / task).parent.mkdir(parents=True, exist_ok=True)
        (cands / f"{task}.py").write_text((ROOT / "tasks" / task / "reference.py").read_text())
    db = tmp_path / "hog.db"
    tasks = ",".join(("Activation/relu",) + BESIDE)
    proc = kbx("eval", "--method", "hog", "--candidates", str(cands), "--device", "cuda",
               "--track", "any", "--tasks", tasks, "--jobs", "6", "--db", str(db),
               "--work", str(tmp_path / "work"), timeout=1200)
    (tmp_path / "eval.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = kbx("results", "--db", str(db), "--format", "json", check=True)
    got = {r["task"]: r["status"] for r in json.loads(res.stdout)["results"]}
    assert got == {task: "passed" for task in ("Activation/relu",) + BESIDE}, (
        got, proc.stderr[-3000:])
