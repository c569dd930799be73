#!/usr/bin/env python3
"""How reading a results database scales with its size: `kbx results` (every method's newest
verdicts, their cases and timing samples) on a database and on copies of it grown to N runs.

    python3 bench/store_read_scaling.py results.db [--copies 1,4,16] [--kbx build/kbx]

Each copy repeats every run of the input (runs, results, cases, samples and grades, new ids; the
candidates are shared), so a copy of N runs has N times the samples and as many newest verdicts
per method. Prints the seconds of `kbx results --format csv` on each. Until session 28 the
samples of each result were read by a query of their own over the whole samples table (it has
no index on result_id): O(results x samples).
"""

import argparse
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

# The tables of a result's rows, copied with it (their result_id shifted).
RESULT_TABLES = ("case_results", "samples", "result_grades", "case_grades")


def grow(src, dst, copies):
    """dst: src with its runs repeated `copies` times in all."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    db.execute("PRAGMA foreign_keys=OFF")
    runs = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY id")]
    for k in range(1, copies):
        for run in runs:
            max_run = db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
            max_result = db.execute("SELECT MAX(id) FROM results").fetchone()[0]
            new_run = max_run + 1
            cols = [c[1] for c in db.execute("PRAGMA table_info(runs)") if c[1] != "id"]
            db.execute(f"INSERT INTO runs(id, {', '.join(cols)}) SELECT ?, "
                       f"{', '.join('run_key || ' + repr(f'-copy{k}') if c == 'run_key' else c for c in cols)} "
                       "FROM runs WHERE id=?", (new_run, run))
            cols = [c[1] for c in db.execute("PRAGMA table_info(results)")
                    if c[1] not in ("id", "run_id")]
            db.execute(f"INSERT INTO results(id, run_id, {', '.join(cols)}) SELECT id + ?, ?, "
                       f"{', '.join(cols)} FROM results WHERE run_id=?", (max_result, new_run, run))
            for table in RESULT_TABLES:
                cols = [c[1] for c in db.execute(f"PRAGMA table_info({table})")
                        if c[1] != "result_id"]
                db.execute(f"INSERT INTO {table}(result_id, {', '.join(cols)}) SELECT "
                           f"result_id + ?, {', '.join(cols)} FROM {table} WHERE result_id IN "
                           "(SELECT id FROM results WHERE run_id=?)", (max_result, run))
    db.commit()
    counts = [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("results", "samples")]
    db.close()
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--copies", default="1,4,16")
    ap.add_argument("--kbx", default="build/kbx")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for copies in (int(c) for c in opts.copies.split(",")):
            path = os.path.join(tmp, f"x{copies}.db")
            results, samples = grow(opts.db, path, copies)
            t0 = time.perf_counter()
            subprocess.run([opts.kbx, "results", "--db", path, "--format", "csv"], check=True,
                           stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - t0
            print(f"{copies:3d} copies: {results:6d} results, {samples:8d} samples: kbx results "
                  f"{seconds:7.2f} s")


if __name__ == "__main__":
    main()
