#!/usr/bin/env python3
"""The references timed as their own candidates: how far their speedups sit from 1 (a timing
change that biases candidates against the eager baseline shows here first).

    kbx results --db RUN.db --format csv | python3 bench/self_speedups.py

Prints the passed tasks' speedups: count, median, geometric mean, median and max |log|, and the
five farthest from 1."""
import csv
import math
import statistics
import sys


def main():
    rows = [r for r in csv.DictReader(sys.stdin) if r["status"] == "passed" and r["speedup"]]
    if not rows:
        print("self_speedups: no passed task with a speedup")
        return 1
    logs = {r["task"]: math.log(float(r["speedup"])) for r in rows}
    values = sorted(logs.values())
    print(f"self speedups, {len(values)} passed tasks: median {math.exp(statistics.median(values)):.4f}, "
          f"geomean {math.exp(statistics.fmean(values)):.4f}, |log| median "
          f"{statistics.median(abs(v) for v in values) * 100:.2f}%, max "
          f"{max(abs(v) for v in values) * 100:.2f}%")
    far = sorted(logs.items(), key=lambda kv: -abs(kv[1]))[:5]
    print("  farthest: " + ", ".join(f"{task} {math.exp(v):.3f}" for task, v in far))
    return 0


if __name__ == "__main__":
    sys.exit(main())
