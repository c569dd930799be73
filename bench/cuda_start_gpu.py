"""What a worker's CUDA start and PyTorch's NVRTC-compiled ("jiterator") kernels cost on this GPU
machine: the two fixed costs every reference worker and candidate job pays before its first case.

  python3 bench/cuda_start_gpu.py [--probe build/probe/libkbx_probe.so] [--counts 1,4,8,12,20]

1. CUDA start under concurrency: N processes import torch, wait for one shared moment, then each
   starts CUDA (torch.empty(1, device="cuda")); printed per N: the median and max of the
   processes' start times and the span from the moment to the last one's start. When the span
   grows with N while one start stays short, the driver serialises context creation: the
   pipeline's many short workers queue for it. With --probe, again with kbx's CUPTI probe injected
   (CUDA_INJECTION64_PATH), as kbx's workers run.
2. Jiterator kernels (torch.special's airy_ai, zeta, polygamma n >= 2, bessel_j1, ...), compiled
   by NVRTC on their first call in a process: the first and second call of each, in float32 and
   float64, with PyTorch's kernel cache off, then in a fresh process reading a cache filled by a
   first one (PYTORCH_KERNEL_CACHE_PATH), which is what a shared cache would give every worker.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

START = r"""
import sys, time, torch
at = float(sys.argv[1])
time.sleep(max(0.0, at - time.time()))
t0 = time.perf_counter(); w0 = time.time()
torch.empty(1, device="cuda"); torch.cuda.synchronize()
print(time.perf_counter() - t0, time.time() - at)
"""

JIT = r"""
import json, time, torch
ops = {
    "airy_ai": lambda x: torch.special.airy_ai(x),
    "zeta": lambda x: torch.special.zeta(x.abs() + 1.5, x.abs() + 0.5),
    "polygamma2": lambda x: torch.special.polygamma(2, x.abs() + 0.5),
    "bessel_j1": lambda x: torch.special.bessel_j1(x),
    "chebyshev_t": lambda x: torch.special.chebyshev_polynomial_t(x, 3),
    "modified_bessel_k0": lambda x: torch.special.modified_bessel_k0(x.abs() + 0.1),
}
torch.empty(1, device="cuda"); torch.cuda.synchronize()
out = {}
for name, fn in ops.items():
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(1 << 16, device="cuda", dtype=dtype)
        times = []
        for _ in range(2):
            t = time.perf_counter(); fn(x); torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        out[f"{name}/{str(dtype)[6:]}"] = times
print(json.dumps(out))
"""


def starts(n, env):
    """CUDA start times (seconds) of n processes started together, and the span to the last."""
    at = time.time() + 8.0 + 0.3 * n  # every process has imported torch by then
    procs = [subprocess.Popen([sys.executable, "-c", START, str(at)], env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(n)]
    rows = [p.communicate()[0].split() for p in procs]
    own = [float(r[0]) for r in rows]
    span = max(float(r[1]) for r in rows)
    return own, span


def jit_times(env):
    out = subprocess.run([sys.executable, "-c", JIT], env=env, stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", help="kbx's probe library, injected for a second series")
    ap.add_argument("--counts", default="1,2,4,8,12,16,20")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    base = dict(os.environ)
    series = [("plain", base)]
    if args.probe:
        probed = dict(base, CUDA_INJECTION64_PATH=os.path.abspath(args.probe),
                      KBX_PROBE_FILE=os.path.join(tempfile.gettempdir(), "kbx-probe-%p.bin"))
        series.append(("probe", probed))
    print("CUDA start, N processes at one moment (seconds)")
    for label, env in series:
        for n in counts:
            own, span = starts(n, env)
            print(f"  {label:5s} N={n:2d}: own start median {statistics.median(own):.3f} "
                  f"max {max(own):.3f}; the last done {span:.3f} after the moment", flush=True)
    print("jiterator kernels: first and second call (seconds)")
    with tempfile.TemporaryDirectory() as cache:
        for label, env in (("no cache", dict(base, USE_PYTORCH_KERNEL_CACHE="0")),
                           ("cache filled", dict(base, PYTORCH_KERNEL_CACHE_PATH=cache)),
                           ("cache read", dict(base, PYTORCH_KERNEL_CACHE_PATH=cache))):
            times = jit_times(env)
            first = sum(t[0] for t in times.values())
            print(f"  {label}: first calls {first:.2f} s in all; " + ", ".join(
                f"{k} {t[0]:.2f}/{t[1]:.3f}" for k, t in times.items()), flush=True)
        print(f"  cache: {len(os.listdir(cache))} files, "
              f"{sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))} bytes")


if __name__ == "__main__":
    main()
