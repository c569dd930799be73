"""bench/make_compile_candidates.py: every task's reference rebound to torch.compile of itself,
judged by kbx on the CPU. The candidates here use torch.compile's eager backend (Dynamo's
capture, guards and recompilations, no code generation): Inductor on the CPU generates C++
rather than Triton and needs a C++ compiler inside the candidate's sandbox, and takes about a
minute per task on two cores, too slow for this test. On the GPU the same files with
`--backend inductor` run Inductor's Triton kernels (bench/compile_workload_gpu.sh)."""

import ast
import json
import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = ROOT / "bench" / "make_compile_candidates.py"
TASKS = ["Activation/relu", "Math/add", "Reduce/sum"]


def _generate(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def test_compiled_references_pass_on_the_cpu(kbx, tmp_path):
    out = tmp_path / "cands"
    proc = _generate("--tasks", str(ROOT / "tasks"), "--out", str(out), "--backend", "eager",
                     "--only", ",".join(TASKS))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(f"{len(TASKS)} files written")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.py")) == [f"{t}.py" for t in TASKS]
    for task in TASKS:
        reference = (ROOT / "tasks" / task / "reference.py").read_text()
        source = (out / f"{task}.py").read_text()
        assert source.startswith(reference)  # the reference unchanged, the block after it
        compile(source, task, "exec")
        entry = task.split("/")[1]  # these tasks' entries are named as the tasks
        top = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
        assert top.count(entry) == 2 and top[-1] == entry  # the original, then the compiled one
        assert 'backend="eager"' in source and "_kbx_compiled_" + entry in source

    db = tmp_path / "compile.db"
    env = dict(os.environ, KBX_WORK=str(tmp_path / "work"))
    kbx("eval", "--method", "compile", "--candidates", str(out), "--track", "any", "--device",
        "cpu", "--db", str(db), "--fresh", check=True, env=env, timeout=300)
    doc = json.loads(kbx("results", "--db", str(db), "--format", "json", check=True).stdout)
    got = {r["task"]: r["status"] for r in doc["results"]}
    assert got == {t: "passed" for t in TASKS}, doc["results"]


def test_the_same_tasks_give_the_same_files(tmp_path):
    for name in ("a", "b"):
        assert _generate("--tasks", str(ROOT / "tasks"), "--out", str(tmp_path / name),
                         "--only", "Math/add,Activation/relu").returncode == 0
    a = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*.py")}
    b = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*.py")}
    assert a == b and len(a) == 2
    assert b'backend="inductor"' in a[next(iter(a))]  # Inductor unless told otherwise


def test_a_manifest_without_entry_is_named(tmp_path):
    tasks = tmp_path / "tasks"
    for name, manifest in (("good", 'name = "good"\nentry = "good"\n'), ("bad", 'name = "bad"\n')):
        (tasks / "Math" / name).mkdir(parents=True)
        (tasks / "Math" / name / "task.toml").write_text(manifest)
        (tasks / "Math" / name / "reference.py").write_text(f"def {name}(x):\n    return x\n")
    proc = _generate("--tasks", str(tasks), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1
    assert str(tasks / "Math" / "bad" / "task.toml") in proc.stderr and "entry" in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written when a task is broken


REPLAY = ROOT / "bench" / "compile_replay.py"


def _replay(cands, *tasks):
    return subprocess.run([sys.executable, str(REPLAY), "--cands", str(cands), "--device", "cpu",
                           "--tiers", "edge,small", "--seed", "7", *tasks],
                          capture_output=True, text=True, timeout=300)


def test_the_replay_finds_a_compiled_reference_right_and_a_wrong_one_wrong(tmp_path):
    """bench/compile_replay.py, the evidence that a compiled candidate's failure is Inductor's
    (it runs the candidate outside kbx against eager and float64): the reference compiled with
    the eager backend is right in every case; one whose alpha is dropped (Inductor's error on
    Math/add in session 24) is named, in the cases that pass an alpha."""
    out = tmp_path / "cands"
    assert _generate("--tasks", str(ROOT / "tasks"), "--out", str(out), "--backend", "eager",
                     "--only", "Math/add").returncode == 0
    proc = _replay(out, "Math/add")
    assert proc.returncode == 0, proc.stderr
    assert "Math/add: " in proc.stdout and ", 0 not ok" in proc.stdout, proc.stdout
    source = (out / "Math" / "add.py").read_text()
    (out / "Math" / "add.py").write_text(source.replace(
        "return _kbx_compiled_add(*args, **kwargs)",
        "kwargs.pop('alpha', None)\n    return _kbx_compiled_add(*args[:2], **kwargs)"))
    proc = _replay(out, "Math/add")
    assert proc.returncode == 0, proc.stderr
    wrong = [line for line in proc.stdout.splitlines()
             if line.startswith("  Math/add") and not line.endswith(": ok")]
    assert wrong and all("error x" in line or "nonfinite" in line for line in wrong), proc.stdout
    assert "replayed 1 tasks: 1 with a case not ok" in proc.stdout
