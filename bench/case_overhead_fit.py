#!/usr/bin/env python3
"""How much of a candidate's timed loops is not its timed calls (issue 14), from a run's
KBX_DEBUG_TIMING log and a results database of the same tasks (its `samples` table):

    python3 bench/case_overhead_fit.py eval.log[.gz] results.db [--max-seconds 1.0]

Per timed case: the timing's wall (`seconds` of the timeline's timing event), its number of
timed calls, the calls' own GPU time (`candidate` samples) and their host time (`candidate_host`).
Prints the totals, the split by sample count, and a least-squares fit over the cases shorter
than --max-seconds of

    seconds = per_case + per_call * calls + a * gpu_seconds + b * host_seconds

whose per_case term is the timer's fixed cost of a case whatever its calls (the warm-up, the
quiet host's round trip, the first hold, the probe's flushes). The log and the database may come
from two runs of the same tasks on the same machine (session 25's call 3 kept one of each).
"""

import argparse
import collections
import gzip
import re
import sqlite3
import statistics

import numpy as np

TIMING = re.compile(r"\| [0-9.]+ timing (\S+) seconds=([0-9.]+)")


def timing_seconds(path):
    """{(task, case): seconds of its timing} from the log's timelines."""
    opener = gzip.open if path.endswith(".gz") else open
    out = {}
    with opener(path, "rt", errors="replace") as log:
        for line in log:
            if ": timeline:" not in line:
                continue
            task = line.split(":")[1].strip()
            for case, seconds in TIMING.findall(line):
                out[(task, case)] = float(seconds)
    return out


def sampled(db_path):
    """{(task, case): (calls, gpu seconds, host seconds)} of the candidates' timed calls."""
    db = sqlite3.connect(db_path)
    rows = collections.defaultdict(dict)
    for task, case, who, n, ms in db.execute(
            "SELECT r.task, s.case_name, s.who, COUNT(*), SUM(s.ms) FROM samples s "
            "JOIN results r ON r.id = s.result_id WHERE s.who IN ('candidate', 'candidate_host') "
            "GROUP BY 1, 2, 3"):
        rows[(task, case)][who] = (n, ms / 1e3)
    return {k: (v["candidate"][0], v["candidate"][1], v.get("candidate_host", (0, 0.0))[1])
            for k, v in rows.items() if "candidate" in v}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("db")
    ap.add_argument("--max-seconds", type=float, default=1.0,
                    help="fit only cases whose timing took less (the slowest are a few calls)")
    opts = ap.parse_args()
    seconds, calls = timing_seconds(opts.log), sampled(opts.db)
    cases = [(seconds[k],) + calls[k] for k in seconds.keys() & calls.keys()]
    if not cases:
        print("no case is in both the log and the database")
        return 1
    wall = sum(c[0] for c in cases)
    gpu = sum(c[2] for c in cases)
    print(f"{len(cases)} timed cases: {wall:.1f} s of timing, of which the timed calls' own GPU "
          f"time {gpu:.1f} s ({sum(c[1] for c in cases)} calls; their host time "
          f"{sum(c[3] for c in cases):.1f} s); the rest {wall - gpu:.1f} s")
    by_calls = collections.defaultdict(list)
    for s, n, g, _h in cases:
        by_calls[min(n // 10 * 10, 100)].append(s - g)
    for n in sorted(by_calls):
        rest = by_calls[n]
        print(f"  {n:3d}{'+' if n == 100 else ' '} calls: {len(rest):4d} cases, not the calls: "
              f"median {statistics.median(rest) * 1e3:6.1f} ms, sum {sum(rest):5.1f} s")
    fit = [c for c in cases if c[0] < opts.max_seconds]
    x = np.array([[1.0, n, g, h] for _s, n, g, h in fit])
    y = np.array([s for s, *_ in fit])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    parts = coef * x.sum(axis=0)
    print(f"fit over the {len(fit)} cases under {opts.max_seconds} s: seconds = "
          f"{coef[0] * 1e3:.1f} ms per case + {coef[1] * 1e3:.2f} ms per call + {coef[2]:.2f} x GPU "
          f"+ {coef[3]:.2f} x host")
    print(f"  of their {y.sum():.1f} s: per case {parts[0]:.1f} s, per call {parts[1]:.1f} s, GPU "
          f"{parts[2]:.1f} s, host {parts[3]:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
