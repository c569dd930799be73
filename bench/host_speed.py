"""How steady the host's CPUs are: the timer's host_loop_ms (a fixed pure-Python loop, the best of
three runs) sampled on each CPU in turn, then traced on one CPU (the timing slot's, by default
the last allowed) for a while.

Session 34 on an H100 machine saw the timer's host_loop_ms before host-waiting timed calls fall
into two groups, about 0.25 and 0.45 ms, switching from one case to the next within a run: a
host-waiting call's time follows it, and so does its speedup's repeatability (masked_select
11.5% between two runs). This script says whether some CPUs are slow all the time (kbx could then
pin the slot's holder to a fast one) or every CPU switches (the VM's host: only pairing the two
sides' timings in time would help).

    python3 bench/host_speed.py [--per-cpu-s 2] [--trace-s 20] [--trace-cpu N] [--out f.json]

Run it on a quiet machine (no kbx run beside it). Needs the repository's python/ on the path
(it uses kbx_worker.timer.host_loop_ms, which imports torch).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

SLOW_FACTOR = 1.3  # a sample this much above the machine's fastest counts as slow


def summary(samples, fastest):
    """min, median, 90th percentile and the share of slow samples of one CPU's host_loop_ms."""
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "slow_share": sum(s > SLOW_FACTOR * fastest for s in ordered) / len(ordered),
    }


def runs(samples, fastest):
    """Lengths of the runs of fast and slow samples, in order: [("F"|"s", length), ...]."""
    out = []
    for s in samples:
        state = "s" if s > SLOW_FACTOR * fastest else "F"
        if out and out[-1][0] == state:
            out[-1] = (state, out[-1][1] + 1)
        else:
            out.append((state, 1))
    return out


def sample(cpu, seconds, pause_s=0.01):
    """host_loop_ms samples on `cpu` for `seconds`, pinned there."""
    from kbx_worker.timer import host_loop_ms

    os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    values = []
    while time.monotonic() < end:
        values.append(host_loop_ms())
        time.sleep(pause_s)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-cpu-s", type=float, default=2.0, help="seconds of samples per CPU")
    ap.add_argument("--trace-s", type=float, default=20.0, help="seconds of the one CPU's trace")
    ap.add_argument("--trace-cpu", type=int, default=None,
                    help="the CPU traced (default: the last allowed, as kbx's timing slot)")
    ap.add_argument("--out", help="write every sample and the summaries here (JSON)")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    per_cpu = {c: sample(c, args.per_cpu_s) for c in cpus}
    trace_cpu = cpus[-1] if args.trace_cpu is None else args.trace_cpu
    trace = sample(trace_cpu, args.trace_s)
    fastest = min(min(v) for v in [*per_cpu.values(), trace])
    print(f"host_loop_ms, the fastest anywhere {fastest:.3f}; slow: above {SLOW_FACTOR}x that")
    print(f"{'cpu':>4} {'n':>5} {'min':>7} {'median':>7} {'p90':>7} {'slow':>6}")
    summaries = {}
    for c, values in per_cpu.items():
        s = summaries[c] = summary(values, fastest)
        print(f"{c:>4} {s['n']:>5} {s['min']:>7.3f} {s['median']:>7.3f} {s['p90']:>7.3f} "
              f"{100 * s['slow_share']:>5.0f}%")
    t = summary(trace, fastest)
    lengths = runs(trace, fastest)
    slow_runs = [n for state, n in lengths if state == "s"]
    print(f"trace on cpu {trace_cpu}, {args.trace_s:.0f} s: {t['n']} samples, median "
          f"{t['median']:.3f}, slow {100 * t['slow_share']:.0f}%, {len(slow_runs)} slow runs "
          f"(longest {max(slow_runs, default=0)} samples)")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({
            "fastest": fastest, "per_cpu": {str(c): v for c, v in per_cpu.items()},
            "summaries": {str(c): s for c, s in summaries.items()}, "trace_cpu": trace_cpu,
            "trace": trace, "trace_runs": lengths}, indent=1))


if __name__ == "__main__":
    main()
