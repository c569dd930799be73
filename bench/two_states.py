#!/usr/bin/env python3
"""The references timed as their own candidates, case by case: which full cases' eager and
candidate times sit far apart, and on which side the slower one is.

Session 38 on an H100: identical calls (the reference in the candidate's worker against the
same call as the eager baseline in the reference's worker) were 13-17% apart on some memory-bound
cases, every sample of a timing in the same state, and the eager side was the slower on 18 of 19
such cases over two runs: a bias that raises those cases' speedups. A change meant to remove it
(bench/placement_gpu.py says what it may follow) should bring both counts down, and the split
near half and half.

    python3 bench/two_states.py [--apart 0.08] RUN.db [RUN.db ...]

Reads each database's case_results (cand_ms, eager_ms, timing_flags). Cases whose times follow
the host (any flag naming host or launch: host_bound, waits_on_host, launch_gaps and their eager_
forms) are left out: their spread is the host's. Prints, per database and over all, the timed
cases compared, those over --apart (|log ratio|) with the side that was slower, and each such
case."""
import argparse
import math
import sqlite3
import sys

HOST_WORDS = ("host", "launch")


def follows_host(flags):
    """Whether a case's timing flags say its times follow the host."""
    return any(word in flag for flag in (flags or "").split(",") for word in HOST_WORDS)


def far_cases(path, apart):
    """(cases compared, [(task, case, cand_ms, eager_ms)] over apart) of one database."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT r.task, c.name, c.cand_ms, c.eager_ms, c.timing_flags FROM case_results c "
        "JOIN results r ON r.id = c.result_id WHERE c.cand_ms > 0 AND c.eager_ms > 0 "
        "ORDER BY r.task, c.name").fetchall()
    con.close()
    kept = [r for r in rows if not follows_host(r[4])]
    far = [r[:4] for r in kept if abs(math.log(r[3] / r[2])) > apart]
    return len(kept), far


def summary(label, compared, far):
    eager_slower = sum(1 for _, _, cand, eager in far if eager > cand)
    return (f"{label}: {compared} timed cases, {len(far)} apart, the eager side slower in "
            f"{eager_slower}, the candidate's in {len(far) - eager_slower}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apart", type=float, default=0.08,
                    help="|log(eager / candidate)| above which a case counts (default 0.08)")
    ap.add_argument("db", nargs="+", help="result databases of the references as candidates")
    args = ap.parse_args()
    total_compared, total_far = 0, []
    for path in args.db:
        try:
            compared, far = far_cases(path, args.apart)
        except sqlite3.Error as e:
            print(f"two_states: {path}: {e} (a kbx result database?)", file=sys.stderr)
            return 2
        print(summary(path, compared, far))
        for task, case, cand, eager in far:
            print(f"  {task} {case}: candidate {cand:.4f} ms, eager {eager:.4f} ms, "
                  f"ratio {eager / cand:.3f}")
        total_compared += compared
        total_far += far
    if len(args.db) > 1:
        print(summary("all", total_compared, total_far))
    return 0


if __name__ == "__main__":
    sys.exit(main())
