#!/usr/bin/env python3
"""The timer's settle on a GPU (issue 14; session 15): another CUDA context's queued work
time-slices with timed calls, and the timer waits for it to drain before its batches.

Starts a second process that queues about HOG_MS of GPU work (float32 matmuls) and exits when it
is done; while its work is on the GPU, times a short call (a 16M-element masked_select) with
CUDA events, without settling; then settles (CudaTimer.settle) and times the call again. Prints
the burst times, the medians before and after, and how long the settle waited.
    python3 bench/settle_gpu.py [--hog-ms 600]
"""
import argparse
import os
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
k = max(1, int(float(sys.argv[1]) / per))
print(f"hog: {k} matmuls of {per:.2f} ms queued", flush=True)
for _ in range(k):
    a @ b
print("queued", flush=True)
torch.cuda.synchronize()
"""


def time_calls(fn, reps=20):
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hog-ms", type=float, default=600.0)
    a = ap.parse_args()
    timer = T.CudaTimer("cuda")
    x = torch.randn(1 << 24, device="cuda")
    m = torch.rand(1 << 24, device="cuda") < 0.5
    call = lambda: torch.masked_select(x, m)  # noqa: E731  waits on the host inside
    time_calls(call, 5)
    alone = time_calls(call)
    print(f"burst alone (ms): {[round(v, 3) for v in timer._burst_ms()]}")
    print(f"settle alone: {timer.settle()}")
    print(f"call alone: median {statistics.median(alone):.3f} ms")
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(a.hog_ms)], stdout=subprocess.PIPE,
                           text=True)
    print(hog.stdout.readline().strip())
    print(hog.stdout.readline().strip())
    time.sleep(0.05)
    burst = timer._burst_ms()
    print(f"burst beside the hog (ms): {[round(v, 3) for v in burst]}, "
          f"contended {T.burst_contended(burst)}")
    beside = time_calls(call)
    print(f"call beside the hog, unsettled: median {statistics.median(beside):.3f} ms, "
          f"max {max(beside):.3f}")
    settled, waited = timer.settle()
    after = time_calls(call)
    print(f"settle: settled={settled} after {waited:.3f} s; call then: median "
          f"{statistics.median(after):.3f} ms, max {max(after):.3f}")
    hog.wait()
    ok = (not T.burst_contended([]) and settled
          and abs(statistics.median(after) / statistics.median(alone) - 1) < 0.05)
    print("settle check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
