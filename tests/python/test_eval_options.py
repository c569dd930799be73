"""kbx eval's tuning options for the pipeline (issue 14): documented in --help, and a value
outside their range is refused before anything runs, naming the option."""
import csv
import io
import os
import re
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("option,bad", [("--live-tasks", "0"), ("--reference-workers", "17"),
                                        ("--reference-chunk", "0")])
def test_a_pipeline_option_out_of_range_is_refused(kbx, tmp_path, option, bad):
    (tmp_path / "cands" / "Math").mkdir(parents=True)
    (tmp_path / "cands" / "Math" / "add.py").write_text("def add(a, b):\n    return a + b\n")
    db = tmp_path / "k.db"
    proc = kbx("eval", option, bad, "--candidates", str(tmp_path / "cands"), "--device", "cpu",
               "--db", str(db))
    assert proc.returncode != 0
    assert option in proc.stderr and "not in range" in proc.stderr, proc.stderr
    assert not db.exists()


def test_the_pipeline_options_are_in_the_help(kbx):
    out = kbx("eval", "--help", check=True).stdout
    for option in ("--jobs", "--reference-workers", "--reference-chunk", "--live-tasks",
                   "--finishing-jobs", "--finishing-from"):
        assert option in out
    # and the variables only the environment sets, each of them read by kbx somewhere
    for variable in ("KBX_QUIET_CPU_FIRST", "KBX_BASELINE_SETTLE", "KBX_TIMER_SETTLE",
                     "KBX_KEEP_QUIET",
                     "KBX_PRELOAD_COMPILER", "KBX_TIMER_WARMUP_MS", "KBX_TIMER_HOLD_FACTOR",
                     "KBX_TIMER_KEEP_OUTPUTS", "KBX_EAGER_REDRAW",
                     "KBX_DEBUG_TIMING",
                     "KBX_SLOT_TRACE", "KBX_SLOT_DIR", "KBX_INDUCTOR_THREADS"):
        assert variable in out, variable


def _trace(path):
    """[(step, who)] of a pipeline trace (KBX_SLOT_TRACE), in time order."""
    steps = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "pipeline":
            steps.append((float(fields[0]), fields[1], fields[3]))
    return [(step, who) for _, step, who in sorted(steps)]


TASKS = ("Activation/relu", "Math/sub", "Math/mul")


def _finishing_run(kbx, tmp_path, *options, tasks=TASKS, env=None, err=None):
    """The tasks' references as candidates on one lane; (the pipeline trace, results CSV). env:
    more of kbx's environment; err: a list that gets kbx's stderr."""
    cands = tmp_path / "cands"
    for task in tasks:
        (cands / task).parent.mkdir(parents=True, exist_ok=True)
        (cands / f"{task}.py").write_text((ROOT / "tasks" / task / "reference.py").read_text())
    trace = tmp_path / "trace.txt"
    db = str(tmp_path / "k.db")
    proc = kbx("eval", "--candidates", str(cands), "--device", "cpu", "--db", db, "--tasks",
               ",".join(tasks), "--jobs", "1", "--track", "any", "--method", "refs", *options,
               env=dict(os.environ, KBX_SLOT_TRACE=str(trace), **(env or {})))
    assert proc.returncode == 0, proc.stderr
    if err is not None:
        err.append(proc.stderr)
    rows = csv.DictReader(io.StringIO(kbx("results", "--db", db, "--format", "csv",
                                          check=True).stdout))
    return _trace(trace), {row["task"]: row["status"] for row in rows}


def test_a_finishing_job_frees_its_lane_when_its_worker_exits(kbx, tmp_path):
    """--finishing-jobs 1 --finishing-from exit: each job frees its one lane once its worker is
    gone, before its verdict (kbx's comparisons run beside the next job); never two jobs before
    that point at once, and every verdict as without it."""
    steps, results = _finishing_run(kbx, tmp_path, "--finishing-jobs", "1", "--finishing-from",
                                    "exit")
    for task in TASKS:
        order = [step for step, who in steps if who == task and step.startswith(("job", "lane"))]
        assert order == ["job_start", "lane_free", "job_end"], (task, steps)
    holding = 0
    for step, _ in steps:
        holding += {"job_start": 1, "lane_free": -1}.get(step, 0)
        assert holding <= 1, steps
    assert results == {task: "passed" for task in TASKS}, results


def test_without_finishing_jobs_a_lane_is_a_job_until_its_verdict(kbx, tmp_path):
    """The default: one thread a lane, so no job starts before the last one's verdict, whenever
    its worker freed the lane."""
    steps, results = _finishing_run(kbx, tmp_path)
    lanes = [step for step, _ in steps if step in ("job_start", "job_end")]
    assert lanes == ["job_start", "job_end"] * 3, steps
    assert results == {task: "passed" for task in TASKS}, results


def test_a_reference_workers_finished_task_goes_to_the_lanes_before_the_workers_end(
        kbx, tmp_path):
    """--reference-chunk 2: the second worker computes two tasks; the first of them is fed to the
    lanes as soon as the worker has finished it, before the worker's end (session 43: on the GPU
    a task waited for its chunk's other task). The first worker's chunk, whose hello is read for
    the run's environment, goes on at its end as before; every verdict as without it."""
    tasks = ("Activation/relu", "Math/add", "Math/mul", "Math/sub")
    steps, results = _finishing_run(kbx, tmp_path, "--reference-chunk", "2", tasks=tasks)
    starts = [who for step, who in steps if step == "refs_start"]
    assert starts == ["Activation/relu,Math/add", "Math/mul,Math/sub"], steps
    done = {who: k for k, (step, who) in enumerate(steps) if step == "refs_done"}
    fed_at = {who: k for k, (step, who) in enumerate(steps) if step == "fed"}
    assert sorted(fed_at) == sorted(tasks), steps
    # the first chunk: both after its worker's end
    assert fed_at["Activation/relu"] > done["Activation/relu,Math/add"], steps
    assert fed_at["Math/add"] > done["Activation/relu,Math/add"], steps
    # the second: its first task before
    assert fed_at["Math/mul"] < done["Math/mul,Math/sub"], steps
    assert results == {task: "passed" for task in tasks}, results


def _reference_workers(stderr):
    """(first task, tasks) of each reference worker, from KBX_DEBUG_TIMING's lines."""
    return re.findall(r"kbx: reference worker for (\S+) \((\d+) tasks\)", stderr)


@pytest.mark.parametrize("life", ["chunk", "lane", "default"])
def test_kept_reference_workers_take_their_lanes_next_chunks(kbx, tmp_path, life):
    """--reference-worker-life lane, the default (for the GPU's many CUDA starts, sessions 44-45):
    with --reference-chunk 1 over four tasks, the first chunk's worker (its hello) ends as
    before, and one more worker computes the other three chunks, each task fed to the lanes as
    it finishes (the first of them long before that worker's end); every verdict as with a
    worker per chunk (chunk: four workers)."""
    tasks = ("Activation/relu", "Math/add", "Math/mul", "Math/sub")
    err = []
    life_flag = [] if life == "default" else ["--reference-worker-life", life]
    steps, results = _finishing_run(kbx, tmp_path, "--reference-chunk", "1", *life_flag,
                                    tasks=tasks, env={"KBX_REFERENCE_WORKER_LIFE": "",
                                                      "KBX_DEBUG_TIMING": "1"}, err=err)
    assert results == {task: "passed" for task in tasks}, results
    workers = _reference_workers(err[0])
    if life == "chunk":
        assert workers == [(task, "1") for task in tasks], err[0]
        return
    assert workers == [("Activation/relu", "1"), ("Math/add", "3")], err[0]
    starts = [who for step, who in steps if step == "refs_start"]
    assert starts == list(tasks), steps
    fed_at = {who: k for k, (step, who) in enumerate(steps) if step == "fed"}
    done_at = {who: k for k, (step, who) in enumerate(steps) if step == "refs_done"}
    for earlier, later in zip(tasks[1:], tasks[2:]):  # one chunk after the other
        assert done_at[earlier] < steps.index(("refs_start", later)), steps
    assert fed_at["Math/add"] < done_at["Math/sub"], steps  # before the worker's end


def test_a_kept_reference_workers_broken_task_is_its_own_and_ends_that_worker(
        kbx, tmp_path):
    """A kept worker (--reference-worker-life lane) whose second chunk's reference raises: that
    task gets reference_error (at the worker's end), the worker ends there (its GPU context may
    be what failed) and a new one computes the next chunk; the other tasks pass."""
    from standins import SCALE_REFERENCE, SCALE_TOML
    suite, cands = tmp_path / "suite", tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    names = ("scale_a", "scale_b", "scale_broken", "scale_c")
    for name in names:
        (suite / "Math" / name).mkdir(parents=True)
        (suite / "Math" / name / "task.toml").write_text(SCALE_TOML.format(name=name))
        reference = SCALE_REFERENCE
        if name == "scale_broken":
            reference = reference.replace("return x * factor", "raise RuntimeError('broken')")
        (suite / "Math" / name / "reference.py").write_text(reference)
        (cands / f"{name}.py").write_text("def scale(x, factor):\n    return x * factor\n")
    db = str(tmp_path / "k.db")
    proc = kbx("--suite", str(suite), "eval", "--candidates", str(tmp_path / "cands"), "--device",
               "cpu", "--db", db, "--jobs", "1", "--track", "any", "--method", "kept",
               "--reference-chunk", "1", "--ref-cache", "off", "--reference-worker-life", "lane",
               env=dict(os.environ, KBX_DEBUG_TIMING="1"))
    assert proc.returncode == 0, proc.stderr
    assert _reference_workers(proc.stderr) == [
        ("Math/scale_a", "1"), ("Math/scale_b", "2"), ("Math/scale_c", "1")], proc.stderr
    rows = csv.DictReader(io.StringIO(kbx("--suite", str(suite), "results", "--db", db,
                                          "--format", "csv", check=True).stdout))
    assert {row["task"]: row["status"] for row in rows} == {
        "Math/scale_a": "passed", "Math/scale_b": "passed",
        "Math/scale_broken": "reference_error", "Math/scale_c": "passed"}


def test_a_relative_work_folder_and_database_judge_as_absolute_ones(kbx, tmp_path):
    """`--work w --db k.db` relative to the current folder: the workers run in folders of their
    own, and until session 35 a relative --work gave every task a reference_error (its worker
    did not find its folder)."""
    cands = tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    (cands / "sub.py").write_text((ROOT / "tasks" / "Math" / "sub" / "reference.py").read_text())
    proc = kbx("--suite", str(ROOT / "tasks"), "eval", "--candidates", "cands", "--device", "cpu",
               "--db", "k.db", "--work", "w", "--tasks", "Math/sub", "--track", "any",
               "--method", "rel", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader(io.StringIO(
        kbx("results", "--db", "k.db", "--format", "csv", cwd=tmp_path, check=True).stdout)))
    assert [(r["task"], r["status"]) for r in rows] == [("Math/sub", "passed")], proc.stderr
