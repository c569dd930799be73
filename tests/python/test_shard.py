"""`kbx eval --shard i/N` splits a run's jobs over machines, each shard resumable on its own, and
`kbx merge` joins the shards' databases into the results of one run."""

import sqlite3

from conftest import ROOT

TASKS = "Activation/relu,Math/abs,Math/add"


def _eval(kbx, db, tmp_path, *extra):
    return kbx("eval", "--method", "expert", "--candidates", str(ROOT / "solutions" / "expert"),
               "--device", "cpu", "--tasks", TASKS, "--seed", "7", "--db", str(db),
               "--work", str(tmp_path / "work"), *extra, check=True)


def _verdicts(kbx, db):
    out = kbx("results", "--db", str(db), "--format", "csv", check=True).stdout
    rows = [line.split(",") for line in out.splitlines()[1:]]
    return sorted((r[2], r[4]) for r in rows)


def test_shards_cover_the_jobs_once_resume_and_merge_like_one_run(kbx, tmp_path):
    shards = [tmp_path / f"shard-{i}.db" for i in (1, 2)]
    for i, db in enumerate(shards, start=1):
        proc = _eval(kbx, db, tmp_path, "--shard", f"{i}/2")
        assert f"shard {i}/2: " in proc.stderr
    tasks = [sorted(t for t, _ in _verdicts(kbx, db)) for db in shards]
    assert tasks == [["Activation/relu", "Math/add"], ["Math/abs"]]  # sorted, round-robin
    with sqlite3.connect(shards[0]) as con:
        (settings,) = con.execute("SELECT settings FROM runs").fetchone()
    assert '"shard":"1/2"' in settings

    again = _eval(kbx, shards[0], tmp_path, "--shard", "1/2")
    assert "already have results" in again.stderr  # a shard resumes on its own

    merged = tmp_path / "all.db"
    out = kbx("merge", *map(str, shards), "-o", str(merged), check=True).stdout
    assert "2 runs" in out and "3 results" in out
    # one database's view of both shards (the same against one kbx eval: tests/slurm)
    assert _verdicts(kbx, merged) == sorted(_verdicts(kbx, shards[0]) + _verdicts(kbx, shards[1]))
    assert all(status == "passed" for _, status in _verdicts(kbx, merged))

    refused = kbx("merge", *map(str, shards), "-o", str(merged))
    assert refused.returncode == 2 and "--force" in refused.stderr


def test_empty_shard_and_bad_shard_text(kbx, tmp_path):
    empty = _eval(kbx, tmp_path / "s5.db", tmp_path, "--shard", "5/5")  # 3 jobs, 5 shards
    assert "shard 5/5: 0 of the 3 jobs" in empty.stderr
    for bad, why in (("0/2", "numbered from 1"), ("3/2", "numbered from 1"), ("2", "i/N")):
        proc = kbx("eval", "--method", "expert", "--device", "cpu", "--shard", bad,
                   "--db", str(tmp_path / "x.db"))
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr
    assert not (tmp_path / "x.db").exists()
