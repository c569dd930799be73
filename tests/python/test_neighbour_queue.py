"""tests/adversarial/sandbox/neighbour_queue on the CPU: without CUDA it queues nothing and its
relu is right, so it passes (bench/neighbour_attack_gpu.sh runs the attack on a GPU)."""
import json
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_neighbour_queue_candidate_is_honest_on_the_cpu(kbx, tmp_path):
    cands = tmp_path / "cands" / "Activation"
    cands.mkdir(parents=True)
    shutil.copy(ROOT / "tests/adversarial/sandbox/neighbour_queue/Activation/relu.py", cands)
    db = tmp_path / "k.db"
    kbx("eval", "--method", "m", "--candidates", str(tmp_path / "cands"), "--tasks",
        "Activation/relu", "--device", "cpu", "--track", "any", "--db", str(db), check=True)
    res = kbx("results", "--db", str(db), "--format", "json", check=True)
    assert [r["status"] for r in json.loads(res.stdout)["results"]] == ["passed"]
