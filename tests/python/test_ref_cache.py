"""Issue 14, item 3: reference work is done once per task, seed and machine and shared by methods
and runs (the reference cache), and no candidate can read or write the cache."""

import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK = "Activation/relu"


def _candidates(tmp_path, name, source):
    folder = tmp_path / name / "Activation"
    folder.mkdir(parents=True)
    (folder / "relu.py").write_text(source)
    return str(tmp_path / name)


def _eval(kbx, cands, method, db, cache, seed, *extra, work=None):
    env = dict(os.environ, KBX_WORK=str(work)) if work else None
    proc = kbx("eval", "--method", method, "--candidates", cands, "--tasks", TASK,
               "--device", "cpu", "--track", "any", "--db", str(db), "--ref-cache", str(cache),
               "--seed", str(seed), "--jobs", "1", *extra, check=True, env=env)
    out = kbx("results", "--db", str(db), "--format", "json", check=True)
    rows = [r for r in json.loads(out.stdout)["results"] if r["method"] == method]
    return proc.stderr, rows[0]["status"]


def test_a_second_method_with_the_same_seed_takes_the_references_from_the_cache(kbx, tmp_path):
    cache, db = tmp_path / "cache", tmp_path / "kbx.db"
    cands = _candidates(tmp_path, "refs", (ROOT / "tasks" / TASK / "reference.py").read_text())
    err, status = _eval(kbx, cands, "first", db, cache, 11)
    assert status == "passed"
    assert f"reference {TASK} [ref]:" in err and "from the cache" not in err
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 1

    err, status = _eval(kbx, cands, "second", db, cache, 11)
    assert status == "passed"
    assert f"reference {TASK}: from the cache" in err
    assert f"reference {TASK} [ref]:" not in err  # no reference worker ran

    err, _ = _eval(kbx, cands, "third", db, cache, 12)  # another seed: other inputs
    assert "from the cache" not in err
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 2


@pytest.mark.parametrize("life", ["chunk", "lane"])
def test_tasks_handed_on_before_their_workers_end_are_stored_and_restored(kbx, tmp_path, life):
    """--reference-chunk 2 over four tasks: the second worker hands its tasks to the lanes as it
    finishes them (session 43), and their references go into the cache all the same; a second
    method with the same seed finds all four there. The same with kept reference workers
    (--reference-worker-life lane, the default, chunks of one task)."""
    tasks = ("Activation/relu", "Math/add", "Math/mul", "Math/sub")
    cands = tmp_path / "refs"
    for task in tasks:
        (cands / task).parent.mkdir(parents=True, exist_ok=True)
        (cands / f"{task}.py").write_text((ROOT / "tasks" / task / "reference.py").read_text())
    cache, db = tmp_path / "cache", tmp_path / "kbx.db"

    def run(method):
        proc = kbx("eval", "--method", method, "--candidates", str(cands), "--tasks",
                   ",".join(tasks), "--device", "cpu", "--track", "any", "--db", str(db),
                   "--ref-cache", str(cache), "--seed", "21", "--jobs", "1",
                   "--reference-chunk", "2" if life == "chunk" else "1", check=True,
                   env=dict(os.environ, KBX_REFERENCE_WORKER_LIFE=life))
        out = json.loads(kbx("results", "--db", str(db), "--format", "json", check=True).stdout)
        return proc.stderr, {r["task"]: r["status"] for r in out["results"] if r["method"] == method}

    err, statuses = run("first")
    assert statuses == {task: "passed" for task in tasks}, err
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 4
    err, statuses = run("second")
    assert statuses == {task: "passed" for task in tasks}, err
    for task in tasks:
        assert f"reference {task}: from the cache" in err, err


def test_a_kept_worker_hands_on_a_chunk_restored_from_the_cache_at_once(kbx, tmp_path):
    """A kept reference worker (the default --reference-worker-life lane) whose next chunk is all in the
    reference cache: that task goes to the lanes as the worker takes the chunk, not at the end of
    the worker (which, kept, may come at the end of the run)."""
    from test_eval_options import _trace
    cands = tmp_path / "refs"
    every = ("Activation/relu", "Math/add", "Math/mul", "Math/sub")
    for task in every:
        (cands / task).parent.mkdir(parents=True, exist_ok=True)
        (cands / f"{task}.py").write_text((ROOT / "tasks" / task / "reference.py").read_text())
    cache, db, trace = tmp_path / "cache", tmp_path / "kbx.db", tmp_path / "trace.txt"

    def run(method, tasks):
        env = dict(os.environ, KBX_SLOT_TRACE=str(trace))
        env.pop("KBX_REFERENCE_WORKER_LIFE", None)
        kbx("eval", "--method", method, "--candidates", str(cands), "--tasks", ",".join(tasks),
            "--device", "cpu", "--track", "any", "--db", str(db), "--ref-cache", str(cache),
            "--seed", "31", "--jobs", "1", "--reference-chunk", "1", check=True, env=env)

    run("first", ("Math/add", "Math/sub"))  # these two into the cache
    trace.unlink()
    run("second", every)  # relu first (alone), add restored, mul computed, then sub restored
    steps = _trace(trace)
    assert ("refs_start", "Math/mul") in steps, steps
    worker_end = max(k for k, step in enumerate(steps) if step == ("refs_done", "Math/sub"))
    assert steps.index(("fed", "Math/sub")) < worker_end, steps
    out = json.loads(kbx("results", "--db", str(db), "--format", "json", check=True).stdout)
    assert {r["task"]: r["status"] for r in out["results"] if r["method"] == "second"} == {
        task: "passed" for task in every}


def test_off_keeps_nothing(kbx, tmp_path):
    cands = _candidates(tmp_path, "refs", (ROOT / "tasks" / TASK / "reference.py").read_text())
    proc = kbx("eval", "--method", "m", "--candidates", cands, "--tasks", TASK, "--device", "cpu",
               "--track", "any", "--db", str(tmp_path / "kbx.db"), "--ref-cache", "off",
               "--seed", "3", "--jobs", "1", check=True)
    assert "from the cache" not in proc.stderr
    assert not (tmp_path / "off").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="candidates are confined only when kbx runs as root")
def test_a_candidate_cannot_reach_the_cache(kbx, tmp_path):
    # A hostile candidate that knows where the cache is: it would poison the stored references
    # (every later run's verdicts) or read them. Confined, it sees neither; it answers wrongly
    # whenever it could see the folder, so `passed` says it could not.
    cache, db = tmp_path / "cache", tmp_path / "kbx.db"
    honest = _candidates(tmp_path, "refs", (ROOT / "tasks" / TASK / "reference.py").read_text())
    _eval(kbx, honest, "first", db, cache, 21)
    entry = next(p for p in cache.iterdir() if not p.name.startswith("."))
    before = {p: p.read_bytes() for p in entry.rglob("*") if p.is_file()}
    attack = ROOT / "tests" / "adversarial" / "sandbox" / "poison_ref_cache" / TASK
    hostile = _candidates(tmp_path, "hostile", attack.with_suffix(".py").read_text())
    work = tmp_path / "work"  # on the cache's filesystem: the run's inputs are links to it
    _, status = _eval(kbx, hostile, "hostile", db, cache, 21, "--keep-files", work=work)
    restored = {p.stat().st_ino for p in work.rglob("*.in.kbt")}
    assert restored & {p.stat().st_ino for p in entry.rglob("*.in.kbt")}, "no input was linked"
    assert status == "passed"
    assert {p: p.read_bytes() for p in entry.rglob("*") if p.is_file()} == before
