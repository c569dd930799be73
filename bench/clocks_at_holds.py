#!/usr/bin/env python3
"""The GPU's clocks while each side of a task held the timing slot: did the eager timings drawn
slow (bench/two_states.py) run at lower clocks than the candidate's timings of the same calls?

Session 38 on an H100: some memory-bound full cases' eager baselines were 13-17% slower than the
identical call timed as the candidate, and placement (bench/placement_gpu.py, session 39) showed
no such spread. This script places the GPU's record (nvidia-smi sampled beside the run) on the
slot trace's holds (KBX_SLOT_TRACE, monotonic seconds) and prints, per task, the median SM clock,
memory clock and power draw over the reference worker's holds (its eager timings) and over the
candidate's, the tasks with a case apart first. Per task, not per case: a hold times a task's
few full cases within a few hundred milliseconds, so a dip as short as one case (tens of
milliseconds) may fall between two samples; a dip over a good part of the hold shows.

    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,\
utilization.gpu,utilization.memory --format=csv,noheader,nounits -lms 50 > clocks.csv &
    python3 -c "import time; print(time.time(), time.monotonic())" > clockpair.txt
    KBX_SLOT_TRACE=trace.txt kbx eval ...
    python3 bench/clocks_at_holds.py --trace trace.txt[.gz] --clocks clocks.csv[.gz] \
        --pair clockpair.txt --db run.db [--apart 0.08]

clockpair.txt's first line is one (wall-clock, monotonic) pair of the machine. nvidia-smi writes
its machine's local time without a zone: the zone's offset is taken as the whole quarter hours
between its first sample and the pair (the sampler starts just before the pair is written)."""
import argparse
import datetime
import gzip
import math
import pathlib
import sqlite3
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from two_states import far_cases  # noqa: E402

FIELDS = ("sm", "mem", "power")  # the columns after the timestamp, in the query's order


def _open(path):
    path = str(path)
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def read_clocks(path):
    """[(epoch seconds as if UTC, {sm, mem, power})] of nvidia-smi's csv; lines it could not
    read (an error text, a field '[N/A]') are skipped."""
    rows = []
    with _open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 1 + len(FIELDS):
                continue
            try:
                when = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
                values = [float(p) for p in parts[1:1 + len(FIELDS)]]
            except ValueError:
                continue
            rows.append((when.replace(tzinfo=datetime.timezone.utc).timestamp(),
                         dict(zip(FIELDS, values))))
    return rows


def zone_offset(first_sample, pair_wall):
    """Seconds to add to nvidia-smi's times: the whole quarter hours between them."""
    return round((pair_wall - first_sample) / 900.0) * 900.0


def read_holds(path):
    """{(holder, task): [(start, end)]} of the slot trace's acquire/release lines (monotonic)."""
    holds, open_at = {}, {}
    with _open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 5 or parts[1] not in ("acquire", "release"):
                continue
            key = (parts[3], parts[4])
            if parts[1] == "acquire":
                open_at[key] = float(parts[0])
            elif key in open_at:
                holds.setdefault(key, []).append((open_at.pop(key), float(parts[0])))
    return holds


def during(samples, spans):
    """The samples whose time falls within any of spans."""
    return [v for t, v in samples if any(a <= t <= b for a, b in spans)]


def medians(values):
    """{field: median} over samples (NaN where none)."""
    return {k: statistics.median(v[k] for v in values) if values else math.nan for k in FIELDS}


def describe(values):
    m = medians(values)
    return f"sm {m['sm']:6.0f} MHz, mem {m['mem']:5.0f} MHz, {m['power']:5.0f} W ({len(values)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", required=True, help="the run's slot trace (KBX_SLOT_TRACE)")
    ap.add_argument("--clocks", required=True, help="nvidia-smi's csv (see above)")
    ap.add_argument("--pair", required=True, help="a line 'wall monotonic' of the machine")
    ap.add_argument("--db", required=True, help="the run's result database")
    ap.add_argument("--apart", type=float, default=0.08, help="as bench/two_states.py's")
    args = ap.parse_args()
    samples = read_clocks(args.clocks)
    if not samples:
        print(f"clocks_at_holds: {args.clocks}: no sample read (nvidia-smi's csv, "
              "timestamp first?)", file=sys.stderr)
        return 2
    with open(args.pair) as f:
        wall, mono = (float(x) for x in f.readline().split()[:2])
    shift = zone_offset(samples[0][0], wall) - wall + mono  # nvidia-smi's time -> monotonic
    samples = [(t + shift, v) for t, v in samples]
    holds = read_holds(args.trace)
    _, far = far_cases(args.db, args.apart)
    far_tasks = {}
    for task, case, cand, eager in far:
        far_tasks.setdefault(task, []).append(f"{case} {eager / cand:.3f}")
    tasks = sorted({task for _, task in holds}, key=lambda t: (t not in far_tasks, t))
    print(f"{len(samples)} samples over {samples[-1][0] - samples[0][0]:.0f} s; "
          f"{len(far_tasks)} tasks with a case over {args.apart} apart (eager / candidate)")
    sides = {"references": [], "candidate": []}
    for task in tasks:
        row = [task]
        for holder in sides:
            values = during(samples, holds.get((holder, task), []))
            sides[holder].append((task in far_tasks, values))
            row.append(f"{holder[:3]}: {describe(values)}")
        print("  ".join(row) + (f"  apart: {', '.join(far_tasks[task])}" if task in far_tasks
                                else ""))
    for holder, rows in sides.items():
        for is_far in (True, False):
            pooled = [v for f, values in rows if f == is_far for v in values]
            label = "tasks apart" if is_far else "the others"
            print(f"{holder}' holds, {label}: {describe(pooled)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
