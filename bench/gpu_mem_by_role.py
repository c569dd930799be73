#!/usr/bin/env python3
"""Who holds the GPU's memory during a kbx run: reference workers, candidates or judges?

kbx's default number of jobs on a GPU is capped by its memory (`jobs_for_gpu_memory`: one job
per 8 GiB beyond the first 32 GiB, 6 on an 80 GB H100). Session 40 on an H100: the compile
workload took 3.24 s per kernel at that cap and 1.77 s with 12 jobs, where 16 of 136 jobs ran
out of memory beside the others (14 of them references) and ran again alone. A better default
needs to know which processes fill the memory at its peaks. This script samples, beside a run,
every process on the GPU (nvidia-smi's compute apps) and names each by its /proc/PID/comm: kbx's
workers call themselves kbx-reference, kbx-candidate, kbx-judge (kbx_worker.__main__.
name_process); anything else is `other`.

    python3 bench/gpu_mem_by_role.py sample --out mem.csv [--interval-ms 250] [--seconds 600]
    python3 bench/gpu_mem_by_role.py summary mem.csv

`sample` runs until --seconds pass or it is killed (run it in the background, kill it after the
run); each line of the CSV is `t,pid,role,MiB`, with pid 0 and role `_total` for the GPU's
memory in use and `_capacity` for its total. `summary` prints, per role, how many processes and
their peaks (median and largest), the sample where the GPU's memory in use was highest with each
role's share then, and how often it was above 90% of the GPU.
"""
import argparse
import collections
import statistics
import subprocess
import sys
import time

ROLE_PREFIX = "kbx-"


def role_of(comm):
    """A process's role from its comm: kbx-reference -> reference; anything else: other."""
    comm = (comm or "").strip()
    return comm[len(ROLE_PREFIX):] if comm.startswith(ROLE_PREFIX) and comm != ROLE_PREFIX \
        else "other"


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read()
    except OSError:
        return ""


def _query(args):
    out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=10).stdout
    return [[x.strip() for x in line.split(",")] for line in out.splitlines() if line.strip()]


def sample(out_path, interval_ms, seconds):
    """Writes t,pid,role,MiB lines until seconds pass (see the module's docstring)."""
    t0 = time.monotonic()
    with open(out_path, "w") as out:
        while time.monotonic() - t0 < seconds:
            t = round(time.monotonic() - t0, 3)
            rows = []
            for used, total in _query(["--query-gpu=memory.used,memory.total"])[:1]:
                rows += [(t, 0, "_total", used), (t, 0, "_capacity", total)]
            for pid, used in _query(["--query-compute-apps=pid,used_memory"]):
                if pid.isdigit():
                    rows.append((t, int(pid), role_of(_comm(pid)), used))
            out.writelines(f"{t},{pid},{role},{mib}\n" for t, pid, role, mib in rows)
            out.flush()
            time.sleep(interval_ms / 1e3)


def read_samples(lines):
    """{t: [(pid, role, MiB)]} from sample's lines (malformed ones skipped)."""
    by_time = collections.defaultdict(list)
    for line in lines:
        parts = line.strip().split(",")
        if len(parts) != 4:
            continue
        try:
            t, row = float(parts[0]), (int(parts[1]), parts[2], float(parts[3]))
        except ValueError:
            continue
        by_time[t].append(row)
    return dict(by_time)


def summarize(by_time):
    """The summary's lines (see the module's docstring)."""
    if not by_time:
        return ["no samples"]
    peaks = collections.defaultdict(dict)  # role -> pid -> largest MiB
    capacity = 0.0
    top_t, top_total = None, -1.0
    over = 0
    for t, rows in sorted(by_time.items()):
        total = sum(mib for pid, role, mib in rows if role == "_total")
        capacity = max([capacity] + [mib for pid, role, mib in rows if role == "_capacity"])
        for pid, role, mib in rows:
            if not role.startswith("_"):
                peaks[role][pid] = max(peaks[role].get(pid, 0.0), mib)
        if total > top_total:
            top_t, top_total = t, total
        over += capacity > 0 and total > 0.9 * capacity
    lines = [f"{len(by_time)} samples; GPU memory {capacity:.0f} MiB; in use at most "
             f"{top_total:.0f} MiB (t={top_t:g} s); above 90% in {over} samples"]
    for role in sorted(peaks):
        values = sorted(peaks[role].values())
        lines.append(f"  {role}: {len(values)} processes, peak median {statistics.median(values):.0f}"
                     f" MiB, largest {values[-1]:.0f} MiB")
    share = collections.Counter()
    count = collections.Counter()
    for pid, role, mib in by_time[top_t]:
        if not role.startswith("_"):
            share[role] += mib
            count[role] += 1
    lines.append("  at the highest: " + ", ".join(
        f"{role} {share[role]:.0f} MiB in {count[role]}" for role in sorted(share)))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--out", required=True)
    s.add_argument("--interval-ms", type=float, default=250)
    s.add_argument("--seconds", type=float, default=600)
    m = sub.add_parser("summary")
    m.add_argument("csv")
    args = ap.parse_args(argv)
    if args.cmd == "sample":
        sample(args.out, args.interval_ms, args.seconds)
        return 0
    with open(args.csv) as f:
        print("\n".join(summarize(read_samples(f))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
