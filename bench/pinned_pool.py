"""What pinning a slot holder's main thread does to a multithreaded host call (issue 14).

kbx pins the holder's main thread to the slot's CPU. A thread inherits the CPUs of the thread
that makes it, so OpenMP's pool, when the process's first parallel call comes after the pin,
lands on that one CPU beside the main thread. Three ways, each in a process of its own:

  before  the pool is made before the pin (its threads keep the process's CPUs)
  after   the pool is made after the pin (every thread on the one CPU)
  spread  made after the pin, then every thread but the main one given the CPUs back, as the
          supervisor does at quiet_wanted (src/sandbox/process.cpp, spread_threads)

Usage: python bench/pinned_pool.py [--n 400] [--calls 5] [--limit 60]   (needs two CPUs or more)
--limit: seconds per way (warm-up included); a way that takes longer is stopped and printed as
such (on the H200's 16 CPUs, "after" ran past 90 s, session 17).
"""
import argparse
import os
import subprocess
import sys
import threading
import time


def _child(way, n, calls):
    import torch

    main = threading.get_native_id()
    cpus = sorted(os.sched_getaffinity(0))
    a = torch.randn(n, n, dtype=torch.float64)
    if way == "before":
        torch.linalg.eig(a)
    os.sched_setaffinity(0, {cpus[-1]})
    torch.linalg.eig(a)  # warm-up
    if way == "spread":
        for tid in os.listdir("/proc/self/task"):
            if int(tid) != main:
                os.sched_setaffinity(int(tid), cpus)
    t0 = time.perf_counter()
    for _ in range(calls):
        torch.linalg.eig(a)
    print(f"{way:7s} {time.perf_counter() - t0:8.3f} s for {calls} eig of {n}x{n} float64 "
          f"({torch.get_num_threads()} threads)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.n, args.calls)
        return 0
    if len(os.sched_getaffinity(0)) < 2:
        print("one CPU: nothing to compare", file=sys.stderr)
        return 1
    for way in ("before", "after", "spread"):
        try:
            subprocess.run([sys.executable, __file__, "--child", way, "--n", str(args.n),
                            "--calls", str(args.calls)], check=True, timeout=args.limit)
        except subprocess.TimeoutExpired:
            print(f"{way:7s} stopped after {args.limit:.0f} s (warm-up included)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
