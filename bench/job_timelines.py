#!/usr/bin/env python3
"""Where a candidate job's time goes before and around the GPU's timing slot, from a `kbx eval`
log written with KBX_DEBUG_TIMING=1 (plain or .gz): per job, the seconds from its spawn to its
hello, from hello to its source check (`static`), from there to `cuda_next` (the job joins every
hush from then on, session 27) and to `imported` (CUDA's start, `cuda_started` since session 27, and the
candidate's import), from `imported` to `slot_wanted` (its small cases), its worker's wall, slot
wait and frozen time, and `judging`: from the worker's end to kbx's verdict (kbx's comparisons of
the outputs, mostly; with --finishing-from exit its lane's next job runs meanwhile).

    python3 bench/job_timelines.py run.log[.gz] [--by-category]

Prints the median, mean and max of each over the jobs (a step a job's log lacks is left out of
that step's figures)."""

import argparse
import gzip
import re
import statistics
import sys

# a job's timeline: its task, the seconds from its start to its spawn, then its events
TIMELINE = re.compile(r"^kbx: (\S+): timeline: before spawn ([0-9.]+) s \| (.*)$")
# The end of a timeline: the worker's exit and the pipes' close (seconds after the spawn), then
# how long after that kbx had judged the job (its comparisons of the outputs, mostly)
ENDS = re.compile(r"\| exited ([0-9.]+) \| pipes closed ([0-9.]+) \| judged \+([0-9.]+) s$")
WORKER = re.compile(r"^kbx: (\S+): worker ([0-9.]+) s \(.*waiting for the slot ([0-9.]+) s, "
                    r"frozen ([0-9.]+) s\)")
STEPS = [("spawn->hello", None, "hello"), ("hello->static", "hello", "static"),
         ("static->cuda_next", "static", "cuda_next"),
         ("cuda_next->imported", "cuda_next", "imported"),
         ("static->cuda_started", "static", "cuda_started"),
         ("cuda_started->imported", "cuda_started", "imported"),
         ("static->imported", "static", "imported"),
         ("imported->slot_wanted", "imported", "slot_wanted")]


def open_log(path):
    return gzip.open(path, "rt", errors="replace") if path.endswith(".gz") else open(
        path, errors="replace")


def first_events(rest):
    """{event: seconds after the spawn} of a timeline's first occurrence of each event."""
    seen = {}
    for part in rest.split(" | "):
        fields = part.split()
        if len(fields) < 2:
            continue
        try:
            t = float(fields[0])
        except ValueError:
            continue
        seen.setdefault(fields[1], t)
    return seen


def parse(path):
    jobs = {}
    with open_log(path) as log:
        for line in log:
            m = TIMELINE.match(line.rstrip("\n"))
            if m:
                job = jobs.setdefault(m.group(1), {})
                job["before_spawn"] = float(m.group(2))
                job["events"] = first_events(m.group(3))
                ends = ENDS.search(m.group(3))
                if ends:
                    job["exited"], _, job["judging"] = map(float, ends.groups())
                continue
            m = WORKER.match(line)
            if m:
                job = jobs.setdefault(m.group(1), {})
                job["worker"], job["slot_wait"], job["frozen"] = map(float, m.group(2, 3, 4))
    return jobs


def figures(jobs):
    rows = []
    for name, start, end in STEPS:
        values = []
        for job in jobs.values():
            ev = job.get("events", {})
            if end in ev and (start is None or start in ev):
                values.append(ev[end] - (ev[start] if start else 0.0))
        rows.append((name, values))
    for key in ("worker", "slot_wait", "frozen", "judging"):
        rows.append((key, [j[key] for j in jobs.values() if key in j]))
    return rows


def show(title, jobs, out=sys.stdout):
    print(f"{title}: {len(jobs)} jobs", file=out)
    print(f"  {'step':24} {'jobs':>5} {'median':>8} {'mean':>8} {'max':>8}   (seconds)", file=out)
    for name, values in figures(jobs):
        if values:
            print(f"  {name:24} {len(values):5d} {statistics.median(values):8.2f} "
                  f"{statistics.mean(values):8.2f} {max(values):8.2f}", file=out)
    frozen = sum(j.get("frozen", 0.0) for j in jobs.values())
    worker = sum(j.get("worker", 0.0) for j in jobs.values())
    if worker:
        print(f"  frozen {frozen:.1f} s of the workers' {worker:.1f} s "
              f"({100 * frozen / worker:.0f}%)", file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--by-category", action="store_true")
    opts = parser.parse_args(argv)
    jobs = parse(opts.log)
    if not jobs:
        print(f"{opts.log}: no 'timeline:' lines (was it run with KBX_DEBUG_TIMING=1?)",
              file=sys.stderr)
        return 1
    show("all", jobs)
    if opts.by_category:
        for cat in sorted({name.split("/")[0] for name in jobs}):
            show(cat, {n: j for n, j in jobs.items() if n.split("/")[0] == cat})
    return 0


if __name__ == "__main__":
    sys.exit(main())
