"""Is a slow host a slow CPU or a slow moment? The host's speed that kbx's timer records before a
host-waiting call's batches (timer.host_loop_ms) took two values on the H200's host in session 42,
about 0.24 and 0.43 ms (min 0.196, max 0.622 over one run), and host-waiting self-speedups were up
to 1.57x apart there (bench/host_bound_apart.py). This times the same loop pinned to each CPU the
process may use, ROUNDS times in turn, and prints per CPU its fastest, median and slowest.
Slow CPUs every round: a CPU's sibling or a neighbour's VM (pinning the timed calls would help);
all CPUs slow in some rounds: the host's moments (only timing the baseline beside the candidate
would help).

  python3 bench/host_cpus.py [--rounds 10] [--pause 0.2]

No GPU needed; about ROUNDS x CPUs x 5 ms, plus the pauses.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kbx_worker.timer import host_loop_ms  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--pause", type=float, default=0.2, help="seconds between rounds")
    a = p.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    per_cpu = {cpu: [] for cpu in allowed}
    try:
        for _ in range(a.rounds):
            for cpu in allowed:
                os.sched_setaffinity(0, {cpu})
                per_cpu[cpu].append(host_loop_ms())
            time.sleep(a.pause)
    finally:
        os.sched_setaffinity(0, allowed)
    best = min(min(v) for v in per_cpu.values())
    print(f"{len(allowed)} CPUs, {a.rounds} rounds; host_loop_ms per CPU (fastest of all {best:.3f})")
    for cpu, ms in per_cpu.items():
        slow = sum(1 for x in ms if x > 1.3 * best)
        print(f"  cpu {cpu:3}: min {min(ms):.3f} median {statistics.median(ms):.3f} "
              f"max {max(ms):.3f}  rounds over 1.3x the fastest: {slow}")
    rounds = list(zip(*per_cpu.values()))
    all_slow = sum(1 for r in rounds if min(r) > 1.3 * best)
    print(f"rounds in which every CPU was over 1.3x the fastest: {all_slow} of {len(rounds)}")


if __name__ == "__main__":
    main()
