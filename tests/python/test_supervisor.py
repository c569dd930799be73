"""The supervisor survives any candidate and any second kbx: the attacks of
tests/adversarial/supervisor (README.md there lists each with its expected status), a kbx killed
while a job runs, kill -9 at random moments, a second kbx eval on the same database, duplicate and
symlinked candidates, a missing candidates folder."""

import json
import os
import pathlib
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import ROOT, kbx_binary

ATTACKS = ROOT / "tests" / "adversarial" / "supervisor"
EXPERT = ROOT / "solutions" / "expert"
# On the GPU machine (bench/sandbox_gpu.sh runs the attack tests): KBX_ADVERSARIAL_DEVICE=cuda.
# There a worker also holds the CUDA driver's own pipes, which nobody drains: an attack that
# writes on every pipe must not block there (session 17: two did, and waited out their limit).
DEVICE = os.environ.get("KBX_ADVERSARIAL_DEVICE", "cpu")


def _expected():
    """attack -> (candidate path, allowed statuses), from the README's table."""
    out = {}
    for line in (ATTACKS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[1].startswith("`"):
            continue
        path = cells[1].strip("`")
        out[path.split("/")[0]] = (path, re.findall(r"`([a-z_]+)`", cells[2]))
    return out


def _eval_args(db, cands, method, *extra):
    return [kbx_binary(), "eval", "--method", method, "--candidates", str(cands), "--device",
            DEVICE, "--tiers", "edge", "--db", str(db), "--work", str(db.parent / "work"), *extra]


def _run(args, timeout=600):
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _rows(db, sql="SELECT run_id, candidate_id, task, status FROM results ORDER BY id"):
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as con:
            return con.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []


def _details(db, wrong):
    """The stored detail of each task named (a key of wrong, "attack (task)" or "task")."""
    rows = _rows(db, "SELECT task, detail FROM results ORDER BY id")
    tasks = {k.split("(")[-1].rstrip(")") for k in wrong}
    return {task: (detail or "")[-800:] for task, detail in rows if task in tasks}


def _statuses(db):
    return {task: status for _, _, task, status in _rows(db)}


def _place(folder, source, rel):
    """Copies a candidate into folder at rel; a line "# append: PATH" of it adds that file of the
    repository after it (an attack beside an expert's kernel, without a copy of the kernel)."""
    dest = folder / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = pathlib.Path(source).read_text()
    for line in text.splitlines():
        if line.startswith("# append: "):
            text += "\n" + (ROOT / line[len("# append: "):].strip()).read_text()
    dest.write_text(text)


# Attacks with tests of their own (each waits out a time limit)
RUN_ALONE = ("slow_call", "close_pipes_and_hang")


def test_attacks_in_one_run_every_other_job_passes(tmp_path):
    """All attacks but the slow one in one run, two lanes, beside two honest expert kernels."""
    expected = _expected()
    cands = tmp_path / "cands"
    for attack, (path, _) in expected.items():
        if attack not in RUN_ALONE:
            _place(cands, ATTACKS / path, path.split("/", 1)[1])
    for honest in ("Activation/gelu.py", "Math/softmax.py"):
        _place(cands, EXPERT / honest, honest)
    db = tmp_path / "k.db"
    proc = _run(_eval_args(db, cands, "attacks", "--jobs", "2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = _statuses(db)
    # every status that is not the one expected, named at once (the GPU machine's run of this
    # test is one call: a first failed assertion would hide the others)
    wrong = {honest: got.pop(honest, None) for honest in ("Activation/gelu", "Math/softmax")}
    wrong = {task: status for task, status in wrong.items() if status != "passed"}
    for attack, (path, allowed) in expected.items():
        if attack in RUN_ALONE:
            continue
        task = path.split("/", 1)[1][: -len(".py")]
        if got.get(task) not in allowed:
            wrong[f"{attack} ({task})"] = f"{got.get(task)}, expected one of {allowed}"
    assert not wrong, (wrong, _details(db, wrong), proc.stderr[-3000:])
    assert len(_rows(db)) == len(expected) + 2 - len(RUN_ALONE)  # one verdict per job


def test_candidate_killing_kbx_is_skipped_on_the_third_run(tmp_path):
    """--cold: the candidate's parent is kbx itself. Two dead kbx, then killed_harness. The
    sandbox hides kbx from a confined candidate, so this defence in depth is tested unconfined
    (KBX_CONFINE=0 with --allow-unisolated), as on a machine that cannot isolate."""
    path, allowed = _expected()["kill_parent"]
    allowed = allowed + ["killed_harness"]
    cands = tmp_path / "cands"
    _place(cands, ATTACKS / path, "Math/add.py")
    db = tmp_path / "k.db"
    codes = []
    for _ in range(3):
        proc = subprocess.run(_eval_args(db, cands, "killer", "--cold", "--allow-unisolated"),
                              cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, KBX_CONFINE="0"))
        codes.append(proc.returncode)
        if proc.returncode == 0:
            break
    assert codes[-1] == 0, (codes, proc.stderr[-3000:])
    status = _statuses(db)["Math/add"]
    assert status in allowed and status != "passed", status
    if -signal.SIGKILL in codes:  # kbx was the victim: two deaths, then skipped unrun
        assert codes == [-signal.SIGKILL, -signal.SIGKILL, 0]
        assert status == "killed_harness"
    assert len(_rows(db)) == 1


def _open_attempt(db):
    rows = _rows(db, "SELECT COUNT(*) FROM attempts WHERE outcome IS NULL")
    return rows and rows[0][0] > 0


def test_kbx_killed_twice_while_a_job_runs_gives_killed_harness(tmp_path):
    path, _ = _expected()["slow_call"]
    cands = tmp_path / "cands"
    _place(cands, ATTACKS / path, "Math/add.py")
    db = tmp_path / "k.db"
    args = _eval_args(db, cands, "slow")
    for _ in range(2):
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        opened = len(_rows(db, "SELECT id FROM attempts"))
        while time.time() < deadline and len(_rows(db, "SELECT id FROM attempts")) == opened:
            time.sleep(0.1)
        assert _open_attempt(db), "the job never started"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    third = _run(args)
    assert third.returncode == 0, third.stderr[-3000:]
    assert _statuses(db) == {"Math/add": "killed_harness"}
    assert "killed_harness" in third.stderr


def test_interrupts_from_a_user_are_no_strikes(tmp_path):
    """SIGTERM or SIGINT from outside (a user, a batch system's time limit) while a job runs: kbx
    dies of it, and the attempt is closed as interrupted, not left as a strike."""
    path, _ = _expected()["slow_call"]
    cands = tmp_path / "cands"
    _place(cands, ATTACKS / path, "Math/add.py")
    db = tmp_path / "k.db"
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(_eval_args(db, cands, "slow"), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not _open_attempt(db):
            time.sleep(0.1)
        assert _open_attempt(db), "the job never started"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -sig, err[-2000:]
        assert "interrupted by signal" in err
    outcomes = [o for (o,) in _rows(db, "SELECT outcome FROM attempts ORDER BY id")]
    assert outcomes == ["interrupted"] * 3
    assert _rows(db) == []


KILL_TASKS = ("Activation/gelu,Fusion/fused_add_gelu,Index/index_select,Loss/mse_loss,Math/add,"
              "Math/softmax")


def test_kill_minus_9_at_random_moments_then_resume(tmp_path):
    """KBX_KILLS (default 10) kill -9 at random moments (start-up, references, jobs, database
    writes); a run that gets through before its kill is done, and the next kills go to a new
    database. Rerun, every database ends with exactly one verdict per job, all in one run. The
    seed is new at every run (printed on a failure), so CI's runs cover other moments each time;
    20 kills were two minutes of CI's fifteen."""
    seed = int(os.environ.get("KBX_KILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    dbs = [tmp_path / "k0.db"]
    kills = 0
    while kills < int(os.environ.get("KBX_KILLS", "10")):
        proc = subprocess.Popen(_eval_args(dbs[-1], EXPERT, "expert", "--tasks", KILL_TASKS),
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=rng.uniform(0.3, 9.0))
            assert proc.returncode == 0, f"KBX_KILL_SEED={seed}"
            dbs.append(tmp_path / f"k{len(dbs)}.db")
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
    for db in dbs:
        args = _eval_args(db, EXPERT, "expert", "--tasks", KILL_TASKS)
        for _ in range(3):
            proc = _run(args)
            if proc.returncode == 0:
                break
        assert proc.returncode == 0, (f"KBX_KILL_SEED={seed}", db, proc.stderr[-3000:])
        rows = _rows(db)
        jobs = {(run, cand) for run, cand, _, _ in rows}
        assert len(rows) == len(jobs) == 6, (seed, rows)  # one verdict per (run, candidate)
        assert {status for *_, status in rows} <= {"passed", "killed_harness"}, (seed, rows)
        assert len({run for run, *_ in rows}) == 1
        assert "already have results" in proc.stderr or "finished" in proc.stderr


def test_second_eval_on_the_same_db_refuses_and_results_still_read(tmp_path):
    db = tmp_path / "k.db"
    args = _eval_args(db, EXPERT, "expert", "--tasks", "Math/add,Activation/gelu")
    first = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    lock = tmp_path / "k.db.lock"
    deadline = time.time() + 60
    while time.time() < deadline and '"run"' not in (lock.read_text() if lock.exists() else ""):
        time.sleep(0.05)
    second = _run(args)
    reading = _run([kbx_binary(), "results", "--db", str(db)])
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-3000:]
    assert second.returncode == 4, second.stderr
    assert "being written by another kbx eval" in second.stderr
    assert re.search(r"run 1 of method expert, kbx pid %d on host \S+, started " % first.pid,
                     second.stderr), second.stderr
    assert "Traceback" not in second.stderr and "terminate" not in second.stderr
    assert reading.returncode == 0, reading.stderr
    rows = _rows(db)
    assert len(rows) == 2 and {s for *_, s in rows} == {"passed"}, rows


def test_duplicate_and_symlinked_candidates(tmp_path):
    lines = [{"file": "Math/add.py", "predict": "def add(input, other):\n    return input\n"},
             {"file": "Activation/gelu.py", "predict": (EXPERT / "Activation/gelu.py").read_text()},
             {"file": "Math/add.py", "predict": (EXPERT / "Math/add.py").read_text()}]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "k.db"
    proc = _run(_eval_args(db, jsonl, "dup"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{jsonl}:1" in proc.stderr and f"{jsonl}:3" in proc.stderr, proc.stderr
    assert "the last one" in proc.stderr
    assert sorted(_statuses(db).items()) == [("Activation/gelu", "passed"), ("Math/add", "passed")]
    assert len(_rows(db)) == 2

    cands = tmp_path / "cands"
    _place(cands, EXPERT / "Math/add.py", "drafts/add_final.txt")
    (cands / "Math").mkdir()
    os.symlink("../drafts/add_final.txt", cands / "Math" / "add.py")
    (cands / "Activation").mkdir()
    outside = tmp_path / "gelu_elsewhere.py"
    shutil.copy(EXPERT / "Activation/gelu.py", outside)
    os.symlink(outside, cands / "Activation" / "gelu.py")
    db2 = tmp_path / "k2.db"
    proc = _run(_eval_args(db2, cands, "links"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{cands / 'Activation' / 'gelu.py'}: a symlink to {outside}" in proc.stderr
    assert "not at Category/name.py" not in proc.stderr
    assert _statuses(db2) == {"Math/add": "passed"}


def test_missing_candidates_is_an_error_before_any_database(tmp_path):
    db = tmp_path / "k.db"
    proc = _run(_eval_args(db, tmp_path / "nowhere", "m"))
    assert proc.returncode == 2
    assert "nowhere: no such file or folder" in proc.stderr
    assert not db.exists() and not (tmp_path / "k.db.lock").exists()


def test_two_runs_into_two_databases_at_once_agree_with_one_alone(tmp_path):
    """Same method, candidates, seed and scratch root, two databases, at the same time (what the
    README advises for one run per GPU): each run has a scratch folder of its own, and both give
    the verdicts of a run alone. Candidates: two experts and one wrong kernel."""
    cands = tmp_path / "cands"
    for honest in ("Math/add.py", "Activation/gelu.py"):
        _place(cands, EXPERT / honest, honest)
    _place(cands, ATTACKS / "kill_parent" / "Math" / "add.py", "Math/sub.py")  # wrong: no sub()
    work = tmp_path / "work"

    def args(name):
        return [kbx_binary(), "eval", "--method", "twins", "--candidates", str(cands), "--device",
                "cpu", "--tiers", "edge,small", "--seed", "1234", "--db", str(tmp_path / name),
                "--work", str(work)]

    procs = [subprocess.Popen(args(n), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for n in ("a.db", "b.db")]
    errs = [p.communicate(timeout=900)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    alone = _run(args("alone.db"), timeout=900)
    assert alone.returncode == 0, alone.stderr[-3000:]
    sql = "SELECT task, status, cases_passed, cases_total FROM results ORDER BY task"
    verdicts = {n: _rows(tmp_path / n, sql) for n in ("a.db", "b.db", "alone.db")}
    assert verdicts["a.db"] == verdicts["alone.db"] == verdicts["b.db"], verdicts
    assert [r[1] for r in verdicts["alone.db"]][:2] == ["passed", "passed"], verdicts
    assert list(work.iterdir()) == [], "a scratch folder was left behind"


@pytest.mark.parametrize("confined", [True, False], ids=["confined", "unconfined"])
def test_a_candidate_that_closes_its_pipes_and_hangs_times_out_at_its_limit(tmp_path, confined):
    """With nothing left to read, kbx still ends the job at its time limit (unconfined, it once
    waited for the process: the job ran as long as the candidate liked)."""
    if confined and os.geteuid() != 0:
        pytest.skip("confined candidates need root")
    path, allowed = _expected()["close_pipes_and_hang"]
    cands = tmp_path / "cands"
    _place(cands, ATTACKS / path, path.split("/", 1)[1])
    db = tmp_path / "k.db"
    extra = ["--timeout", "8"] + ([] if confined else ["--allow-unisolated"])
    env = dict(os.environ) if confined else dict(os.environ, KBX_CONFINE="0")
    t0 = time.monotonic()
    proc = subprocess.run(_eval_args(db, cands, "hang", *extra), cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _statuses(db)["Math/sub"] in allowed, proc.stderr[-3000:]
    assert time.monotonic() - t0 < 120, "the job outlived its limit"
