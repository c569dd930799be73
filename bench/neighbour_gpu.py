#!/usr/bin/env python3
"""Does another process's GPU work move kbx's timings? (issue 14, trust; session 30)

kbx freezes every other job while one times (the quiet host), but a frozen process's kernels
already queued on the GPU keep running, and nothing stops a candidate from queueing seconds of
work during its untimed small cases, outside the timing slot. Without MPS, the GPU time-slices
between contexts: a timed call longer than a slice could be stretched by a neighbour's work, and a
hostile candidate could use that to slow the eager baselines timed beside it (every speedup of
its method up) or its siblings' timings. Session 17 saw no effect on a 0.16 ms call beside 0.5 s
of matmuls (bench/settle_gpu.py, which this replaces); this measures longer calls, with the
neighbour running and frozen (SIGSTOP, as the quiet host's cgroup freeze leaves its queue).

Times with kbx's CudaTimer (no probe, no quiet host, its settle off) calls of about 0.04, 0.34,
0.7, 1.1, 2.7 and 21 ms:
  alone             nothing else on the GPU
  neighbour         a second process keeps a queue of float32 matmuls (about 130 ms each) full
  frozen            the same process, stopped (SIGSTOP) once it has queued HOG_S seconds of work
and prints each call's median per condition and its ratio to alone, with the timer's burst check
(burst_contended) under each: whether the timer's settle could see the neighbour.
    python3 bench/neighbour_gpu.py [--hog-s 20]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

from kbx_worker import timer as T  # noqa: E402

HOG = r"""
import sys, time, torch
n = 8192
a = torch.randn(n, n, device="cuda"); b = torch.randn(n, n, device="cuda")
torch.cuda.synchronize()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record(); a @ b; e1.record(); torch.cuda.synchronize()
per = e0.elapsed_time(e1)
k = max(1, int(float(sys.argv[1]) * 1e3 / per))
mode = sys.argv[2]
print(f"neighbour: matmuls of {per:.1f} ms, {mode}", flush=True)
if mode == "queue":  # queue all of it at once, then say so (the caller stops this process)
    for _ in range(k):
        a @ b
    print("queued", flush=True)
    torch.cuda.synchronize()
else:  # keep about 0.5 s queued, for as long as it lives
    print("running", flush=True)
    while True:
        ev = torch.cuda.Event()
        for _ in range(max(1, int(500 / per))):
            a @ b
        ev.record()
        ev.synchronize()
"""


def workloads(device):
    """(name, callable) of a few lengths: the timer's warm-up sizes its batches."""
    x16 = torch.randn(1 << 24, device=device)
    a2 = torch.randn(2048, 2048, device=device)
    a25 = torch.randn(2560, 2560, device=device)
    a3 = torch.randn(3072, 3072, device=device)
    a4 = torch.randn(4096, 4096, device=device)
    a8 = torch.randn(8192, 8192, device=device)
    torch.backends.cuda.matmul.allow_tf32 = False
    return [
        ("relu_16M", lambda: torch.relu(x16)),
        ("mm_f32_2048", lambda: a2 @ a2),
        # (session 31) between 0.34 and 2.7 ms: where a neighbour starts to move the median, for
        # the candidates' settle threshold (timer.SETTLE_MIN_CALL_MS)
        ("mm_f32_2560", lambda: a25 @ a25),
        ("mm_f32_3072", lambda: a3 @ a3),
        ("mm_f32_4096", lambda: a4 @ a4),
        ("mm_f32_8192", lambda: a8 @ a8),
    ]


def long_burst_ms(timer, count):
    """count back-to-back L2 scrubs, each between two events: the timer's burst, longer than a
    time slice (SETTLE_BURST's 8 scrubs take 0.5 ms, less than one)."""
    record = T._ORIGINALS["torch.cuda.Event.record"]
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(count + 1)]
    torch.cuda.synchronize()
    record(marks[0])
    for k in range(count):
        timer.scrub.zero_()
        record(marks[k + 1])
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in zip(marks, marks[1:])]


def measure(timer, loads, label):
    burst = timer._burst_ms()
    row = {"burst_contended": T.burst_contended(burst), "burst_max_ms": max(burst)}
    for count in (40, 160):
        lb = long_burst_ms(timer, count)
        print(f"{label:10s} burst of {count} scrubs ({sum(lb):.2f} ms): contended "
              f"{T.burst_contended(lb)}, median {statistics.median(lb):.3f} max {max(lb):.3f} ms",
              flush=True)
    timer._steady_load = False  # each condition's settle on its own
    settled, waited = timer.settle()
    print(f"{label:10s} settle (SETTLE_BURST {T.SETTLE_BURST}): settled={settled} after "
          f"{waited:.2f} s", flush=True)
    row["settled"] = settled
    for name, fn in loads:
        samples = timer.run(fn)
        row[name] = (statistics.median(samples), max(samples), len(samples))
    print(f"{label:10s} burst contended={row['burst_contended']} (max scrub "
          f"{row['burst_max_ms']:.3f} ms); " + "; ".join(
              f"{n} {row[n][0]:.3f} ms (max {row[n][1]:.3f}, n={row[n][2]})" for n, _ in loads),
          flush=True)
    return row


def start_neighbour(hog_s, mode):
    p = subprocess.Popen([sys.executable, "-c", HOG, str(hog_s), mode], stdout=subprocess.PIPE,
                         text=True)
    print(p.stdout.readline().strip(), flush=True)
    print(p.stdout.readline().strip(), flush=True)
    time.sleep(0.3)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hog-s", type=float, default=20.0)
    a = ap.parse_args()
    timer = T.CudaTimer(torch.device("cuda"))
    timer.settles = False  # the calls timed as they come: the settle is measured on its own
    loads = workloads("cuda")
    for _, fn in loads:  # compiles, cuBLAS handles
        fn()
    torch.cuda.synchronize()
    alone = measure(timer, loads, "alone")
    p = start_neighbour(a.hog_s, "loop")
    running = measure(timer, loads, "neighbour")
    p.kill()
    p.wait()
    time.sleep(0.5)
    p = start_neighbour(a.hog_s, "queue")
    os.kill(p.pid, signal.SIGSTOP)
    t0 = time.perf_counter()
    frozen = measure(timer, loads, "frozen")
    print(f"(frozen measured in {time.perf_counter() - t0:.1f} s of the {a.hog_s:.0f} s queued)")
    p.kill()
    p.wait()
    time.sleep(0.5)
    again = measure(timer, loads, "alone2")
    print("ratio to alone (median):")
    for name, _ in loads:
        base = alone[name][0]
        print(f"  {name:12s} neighbour {running[name][0] / base:6.3f}  frozen "
              f"{frozen[name][0] / base:6.3f}  alone again {again[name][0] / base:6.3f}")
    ok = alone["settled"] and again["settled"] and not running["settled"] and not frozen["settled"]
    print("settle sees the neighbour:", "ok" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
