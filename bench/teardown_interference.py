#!/usr/bin/env python3
"""Does a CUDA process's exit disturb another process's timed kernels? (issue 14)

kbx holds a candidate's GPU timing slot until its process is dead: about 0.17 s per job on the
H200 between the worker's `done` and its exit, most of it (the question) the driver tearing down
the CUDA context. Releasing the slot at `done` (the process killed, its teardown overlapping the
next holder's timed loops) is only sound if a teardown leaves the GPU's engines alone.

A victim times a memory-bound kernel (a 256 MB copy) in batches with CUDA events for the whole
run, noting each batch's host window. Meanwhile a disturber starts children one after another;
each starts CUDA, allocates ALLOC_GB, runs a kernel, synchronises, notes the time and ends with
os._exit (as kbx's workers do), mode `idle`; or, mode `busy`, queues a GPU spin of SPIN_S seconds
and ends without waiting (what a hostile worker that says `done` early would leave behind).
Prints the victim's per-call times in batches that overlap a child's exit window (from its
os._exit to its reaping by the parent) against the others.

    python3 bench/teardown_interference.py [--mode idle|busy] [--children 6] [--alloc-gb 4]
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

CHILD = r"""
import os, sys, time, torch
mode, alloc_gb, spin_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
x = torch.empty(int(alloc_gb * 2**30), dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
if mode == "busy":
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); torch.cuda._sleep(1_000_000); end.record(); end.synchronize()
    cycles_per_s = 1_000_000 / (start.elapsed_time(end) / 1e3)
    torch.cuda._sleep(int(spin_s * cycles_per_s))  # queued, not waited for
print(time.monotonic(), flush=True)
os._exit(0)
"""


def victim(stop, batches, ready):
    import torch
    src = torch.empty(64 * 2**20, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    reps = 20
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(50):
        dst.copy_(src)
    torch.cuda.synchronize()
    ready.set()
    while not stop.is_set():
        t0 = time.monotonic()
        for i in range(reps):
            starts[i].record()
            dst.copy_(src)
            ends[i].record()
        torch.cuda.synchronize()
        t1 = time.monotonic()
        batches.append((t0, t1, [s.elapsed_time(e) for s, e in zip(starts, ends)]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("idle", "busy"), default="idle")
    ap.add_argument("--children", type=int, default=6)
    ap.add_argument("--alloc-gb", type=float, default=4.0)
    ap.add_argument("--spin-s", type=float, default=2.0)
    args = ap.parse_args()
    stop, ready, batches = threading.Event(), threading.Event(), []
    thread = threading.Thread(target=victim, args=(stop, batches, ready))
    thread.start()
    ready.wait()
    windows = []
    for _ in range(args.children):
        child = subprocess.Popen([sys.executable, "-c", CHILD, args.mode, str(args.alloc_gb),
                                  str(args.spin_s)], stdout=subprocess.PIPE, text=True)
        line = child.stdout.readline()
        child.wait()
        reaped = time.monotonic()
        if line.strip():
            windows.append((float(line), reaped))
        time.sleep(0.3)
    time.sleep(0.5)
    stop.set()
    thread.join()
    exits = [r - e for e, r in windows]
    print(f"mode {args.mode}: {len(windows)} children, os._exit to reaped: median "
          f"{statistics.median(exits) * 1e3:.0f} ms, max {max(exits) * 1e3:.0f} ms")
    inside, outside = [], []
    for t0, t1, samples in batches:
        hit = any(t0 < r and t1 > e for e, r in windows)
        (inside if hit else outside).extend(samples)
    for name, samples in (("during an exit", inside), ("otherwise", outside)):
        if samples:
            s = sorted(samples)
            print(f"  copy 256 MB {name:15s}: {len(s):6d} calls, median {statistics.median(s):.4f}"
                  f" ms, p90 {s[int(0.9 * (len(s) - 1))]:.4f} ms, max {s[-1]:.4f} ms")


if __name__ == "__main__":
    main()
