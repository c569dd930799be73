#!/usr/bin/env python3
"""While the GPU's timing slot sat idle, what was the job that took it next doing? From a run's
slot trace (KBX_SLOT_TRACE: each acquire and release, and the pipeline's job_start steps) and its
KBX_DEBUG_TIMING log (each job's timeline from its spawn):

    python3 bench/slot_idle_who.py slot-trace.txt[.gz] eval.log[.gz] [--min-gap 0.05]

For every idle gap of at least --min-gap seconds before a candidate's hold, the next holder's
step is sampled every 10 ms over the gap: before its spawn, spawned without a hello, the source
check (hello), CUDA's start and its import (static, not imported), its edge and small cases
(imported, the slot not asked for yet), or waiting for the slot (asked). Session 28 on sessions
25 and 26's runs of the 184 references: 70-85% of the idle time the next holder was running its
small cases, so the slot waited for a job to finish them (`kbx eval --slot-at early`).
"""

import argparse
import collections

from job_timelines import open_log, parse


def read_trace(path):
    """({task: job_start seconds}, [(seconds, acquire|release, holder)])"""
    starts, holds = {}, []
    with open_log(path) as trace:
        for line in trace:
            fields = line.split()
            if len(fields) < 4:
                continue
            t = float(fields[0])
            if fields[2] == "pipeline":
                if fields[1] == "job_start":
                    starts[fields[3]] = t
            elif fields[1] in ("acquire", "release"):
                holds.append((t, fields[1], " ".join(fields[3:])))
    return starts, holds


def step_at(task, t, starts, jobs):
    """The job's step at trace time t (jobs: job_timelines.parse's)."""
    job = jobs.get(task, {})
    if task not in starts or "events" not in job:
        return "unknown"
    since_spawn = t - starts[task] - job["before_spawn"]
    if since_spawn < 0:
        return "before spawn"
    seen = {name for name, at in job["events"].items() if at <= since_spawn}
    if "slot_wanted" in seen:
        return "waiting for the slot (asked)"
    if "imported" in seen:
        return "edge and small cases (imported, not asked)"
    if "static" in seen:
        return "CUDA start and import (static, not imported)"
    if "hello" in seen:
        return "source check (hello)"
    return "spawned, no hello"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("log")
    ap.add_argument("--min-gap", type=float, default=0.05)
    opts = ap.parse_args()
    starts, holds = read_trace(opts.trace)
    jobs = parse(opts.log)
    idle, gaps = collections.Counter(), 0
    for (t0, what0, _), (t1, what1, holder) in zip(holds, holds[1:]):
        if what0 != "release" or what1 != "acquire" or t1 - t0 < opts.min_gap:
            continue
        if not holder.startswith("candidate "):
            continue
        task = holder[len("candidate "):]
        gaps += 1
        samples = max(1, int((t1 - t0) / 0.01))
        for k in range(samples):
            idle[step_at(task, t0 + (k + 0.5) * (t1 - t0) / samples, starts, jobs)] += (
                (t1 - t0) / samples)
    total = sum(idle.values())
    print(f"idle gaps of {opts.min_gap} s or more before a candidate's hold: {gaps}, {total:.1f} s;"
          " what the next holder was doing meanwhile:")
    for step, seconds in idle.most_common():
        print(f"  {step:48s} {seconds:6.1f} s ({100 * seconds / max(total, 1e-9):4.1f}%)")


if __name__ == "__main__":
    main()
