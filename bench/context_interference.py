#!/usr/bin/env python3
"""Does another process's CUDA start disturb a timed loop? (issue 14, KBX_QUIET_CPU_FIRST=context)

A candidate's job joins the quiet host (every other job's timed loop freezes it) right before its
CUDA starts: on the H200 (session 29) the start then took a median 3.1 s in the pipeline, most of
it frozen, against 0.2-1 s alone. `KBX_QUIET_CPU_FIRST=context` joins after the start instead
(the context made, before the candidate's import: no candidate code runs unfrozen with CUDA).
It is sound only if making a context leaves another process's timed kernels alone.

A victim times kernels of three sizes (a 4 MB copy, a 256 MB copy, a 4096 float16 matmul) in
batches with CUDA events for the whole run, noting each batch's host window. Meanwhile waves of
WAVE children start CUDA at once, as a run's lanes do (torch.empty on the GPU, with kbx's probe
loaded when --probe is given), note when their start began and ended, wait and exit. Prints the
victim's medians in batches that overlap a start against those that overlap no child's start or
exit (an exit's teardown is bench/teardown_interference.py's question).

    python3 bench/context_interference.py [--waves 6] [--wave 4] [--probe LIB]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CHILD = r"""
import os, sys, time
if "KBX_PROBE_DIR" in os.environ:
    os.environ["KBX_PROBE_FILE"] = os.path.join(os.environ["KBX_PROBE_DIR"], f"{os.getpid()}.bin")
import torch
t0 = time.monotonic()
torch.empty(1, device="cuda")
torch.cuda.synchronize()
t1 = time.monotonic()
print(t0, t1, flush=True)
time.sleep(float(sys.argv[1]))
print(time.monotonic(), flush=True)
os._exit(0)
"""


def victim(stop, batches, ready):
    import torch
    small = torch.empty(1 << 20, dtype=torch.float32, device="cuda").fill_(1.0)
    small_out = torch.empty_like(small)
    big = torch.empty(64 << 20, dtype=torch.float32, device="cuda").fill_(1.0)
    big_out = torch.empty_like(big)
    a = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
    b = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
    kinds = {"copy 4 MB": lambda: small_out.copy_(small),
             "copy 256 MB": lambda: big_out.copy_(big),
             "matmul 4096 f16": lambda: torch.mm(a, b)}
    reps = 10
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    for fn in kinds.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    ready.set()
    while not stop.is_set():
        for name, fn in kinds.items():
            t0 = time.monotonic()
            marks[0].record()
            for i in range(reps):
                fn()
                marks[i + 1].record()
            torch.cuda.synchronize()
            t1 = time.monotonic()
            batches.append((name, t0, t1, [marks[i].elapsed_time(marks[i + 1])
                                           for i in range(reps)]))


def run_wave(n, env, linger_s):
    """n children started at once; returns their (start begun, start done, exit begun)."""
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, str(linger_s)], env=env,
                             stdout=subprocess.PIPE, text=True) for _ in range(n)]
    spans = []
    for kid in kids:
        first = kid.stdout.readline().split()
        last = kid.stdout.readline().strip()
        kid.wait()
        if len(first) == 2 and last:
            spans.append((float(first[0]), float(first[1]), float(last), time.monotonic()))
    return spans


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waves", type=int, default=6)
    ap.add_argument("--wave", type=int, default=4, help="children starting CUDA at once")
    ap.add_argument("--probe", default=None, help="libkbx_probe.so, loaded at each child's start")
    ap.add_argument("--linger-s", type=float, default=1.0)
    args = ap.parse_args()
    env = dict(os.environ)
    if args.probe:
        env["CUDA_INJECTION64_PATH"] = os.path.abspath(args.probe)
        env["KBX_PROBE_DIR"] = tempfile.mkdtemp(prefix="kbx_ctx_probe_")  # a file per child
    stop, ready, batches = threading.Event(), threading.Event(), []
    thread = threading.Thread(target=victim, args=(stop, batches, ready))
    thread.start()
    ready.wait()
    time.sleep(1.0)  # batches with no child at all
    spans = []
    for _ in range(args.waves):
        spans += run_wave(args.wave, env, args.linger_s)
        time.sleep(1.0)
    stop.set()
    thread.join()
    starts = [s1 - s0 for s0, s1, _, _ in spans]
    print(f"{len(spans)} children in waves of {args.wave}{' with the probe' if args.probe else ''}:"
          f" CUDA start median {statistics.median(starts):.2f} s, max {max(starts):.2f} s")
    groups = {}
    for name, t0, t1, samples in batches:
        in_start = any(t0 < s1 and t1 > s0 for s0, s1, _, _ in spans)
        in_exit = any(t0 < reaped and t1 > e for _, _, e, reaped in spans)
        where = "during a start" if in_start else ("during an exit" if in_exit else "otherwise")
        groups.setdefault((name, where), []).extend(samples)
    for name in ("copy 4 MB", "copy 256 MB", "matmul 4096 f16"):
        base = groups.get((name, "otherwise"))
        for where in ("otherwise", "during a start", "during an exit"):
            s = sorted(groups.get((name, where), []))
            if not s:
                continue
            ratio = f" ({statistics.median(s) / statistics.median(base):.3f}x)" if base else ""
            print(f"  {name:16s} {where:15s}: {len(s):6d} calls, median "
                  f"{statistics.median(s):.4f} ms{ratio}, p90 {s[int(0.9 * (len(s) - 1))]:.4f} ms,"
                  f" max {s[-1]:.4f} ms")


if __name__ == "__main__":
    main()
