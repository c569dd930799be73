#!/usr/bin/env python3
"""Where a timed case's time goes inside kbx's CudaTimer, outside kbx (issue 14), on a GPU:

    KBX_PROBE_LIB=.carry/lib/libkbx_probe.so python3 bench/timer_overhead.py [--runs 5]

In session 25's run of the 184 references as candidates on the H200, 67 of the 107 s of timed
loops were not the timed calls themselves, and a fit over the 728 cases gave about 69 ms per case
whatever its number of calls. This times CudaTimer.run on a few workloads like the suite's
(one kernel of 30 us, one of 0.3 ms, a launch-bound tiny one, a call of several kernels, a matmul,
a call that waits on the host), each case with a value load before each call as a candidate's
timing does, and prints per workload the wall of a run() and its parts: the warm-up estimate, the
batches (of which the calls' own GPU time, the GPU holds, the L2 guard's driver calls) and the
probe's flushes; the fixed costs alone (an L2 reset, a flush, a synchronize, a scrub). Each
workload runs under three settings in turn: A, the timer's own (10 ms of warm-up, each batch's hold
twice the last batch's enqueue), B (--warmup-ms, --hold-factor: 3 ms and 1.25 by default)
and C, the timer's own again (the control: how far two runs of the same settings differ),
with the median of the calls under each: whether B's shorter warm-up and holds save slot time
without moving what is measured (a hold shorter than the enqueue would let launch gaps into a
launch-bound call's time: tiny_relu_4K and layernorm_gelu_4Kx1K would show it).

With KBX_PROBE_LIB the worker runs under the probe as kbx runs it (CUDA_INJECTION64_PATH, its
records to a temporary file), since the probe's callbacks and flushes are part of the cost; the
script re-executes itself with that environment. Nothing here is a verdict: a bench/README.md
section reads its output.
"""

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def under_probe():
    """Re-runs this script under the probe when KBX_PROBE_LIB names it and it is not loaded yet."""
    lib = os.environ.get("KBX_PROBE_LIB")
    if not lib or os.environ.get("CUDA_INJECTION64_PATH"):
        return None
    with tempfile.NamedTemporaryFile(prefix="kbx_timer_overhead_", suffix=".bin") as records:
        env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.abspath(lib),
                   KBX_PROBE_LIB=os.path.abspath(lib), KBX_PROBE_FILE=records.name)
        return subprocess.call([sys.executable] + sys.argv, env=env)


class Clock:
    """Seconds spent in wrapped methods, by name."""

    def __init__(self):
        self.seconds = collections.Counter()
        self.calls = collections.Counter()

    def wrap(self, owner, name, label):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - t0
                self.calls[label] += 1

        setattr(owner, name, timed)


def workloads(torch):
    """{name: (fn, inputs, what to load before each call)}: the call and a tensor it reads, which
    a value load (a copy from a second buffer, as a candidate's variant) rewrites before each
    timed call."""
    dev = "cuda"
    x16 = torch.randn(16 << 20, device=dev)
    x64 = torch.randn(64 << 20, device=dev)
    y64 = torch.randn(64 << 20, device=dev)
    tiny = torch.randn(4096, device=dev)
    rows = torch.randn(4096, 1024, device=dev)
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    mask_src = torch.randn(4 << 20, device=dev)
    fns = {
        "relu_f32_16M": (lambda: torch.relu(x16), x16),
        "add_f32_64M": (lambda: x64 + y64, x64),
        "tiny_relu_4K": (lambda: torch.relu(tiny), tiny),
        "layernorm_gelu_4Kx1K": (lambda: torch.nn.functional.gelu(
            torch.nn.functional.layer_norm(rows, (1024,))) * 2 + 1, rows),
        "matmul_bf16_4K": (lambda: a @ a, a),
        "masked_select_4M": (lambda: torch.masked_select(mask_src, mask_src > 0), mask_src),
    }
    return {name: (fn, t, t.clone()) for name, (fn, t) in fns.items()}


def fixed_costs(torch, timer, cuda_timer, repeat=200):
    """Milliseconds of the timer's fixed steps, each the median of `repeat`."""
    def median_ms(step):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    torch.cuda.synchronize()
    out = {
        "l2_reset": median_ms(cuda_timer.l2.reset),
        "l2_check": median_ms(cuda_timer.l2.check),
        "synchronize_idle": median_ms(torch.cuda.synchronize),
        "probe_flush_idle": median_ms(cuda_timer.probe.flush),
        "sync_debug_switch": median_ms(lambda: (torch.cuda.set_sync_debug_mode("warn"),
                                                torch.cuda.set_sync_debug_mode(0))),
        "two_events": median_ms(lambda: (torch.cuda.Event(enable_timing=True),
                                         torch.cuda.Event(enable_timing=True))),
        "host_loop_ms": timer.host_loop_ms(),
    }
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        cuda_timer.scrub.zero_()
    end.record()
    torch.cuda.synchronize()
    out["scrub_gpu"] = start.elapsed_time(end) / 20
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timer.run() calls per workload and setting")
    ap.add_argument("--warmup-ms", type=float, default=3.0,
                    help="the B setting's warm-up (A: timer.WARMUP_MS)")
    ap.add_argument("--hold-factor", type=float, default=1.25,
                    help="the B setting's hold, times the last batch's enqueue (A: 2)")
    opts = ap.parse_args()
    rc = under_probe()
    if rc is not None:
        return rc
    import torch
    from kbx_worker import timer

    if not torch.cuda.is_available():
        print("timer_overhead: no CUDA device; this bench runs on the GPU machine")
        return 2
    torch.cuda.init()
    clock = Clock()
    clock.wrap(timer.CudaTimer, "_estimate_ms", "estimate")
    clock.wrap(timer.CudaTimer, "_batch", "batches")
    clock.wrap(timer.L2Guard, "reset", "l2_reset")
    clock.wrap(timer.L2Guard, "check", "l2_check")
    clock.wrap(timer.ProbeMarks, "flush", "probe_flush")
    holds = []  # the GPU hold of each batch of the current run(), ms
    enqueue_hold = timer.CudaTimer._hold

    def logged_hold(self):
        holds.append(self.hold_ms)
        return enqueue_hold(self)

    timer.CudaTimer._hold = logged_hold
    cuda_timer = timer.CudaTimer(torch.device("cuda"))
    # C: A again, the control (session 29: B/A 0.9986-1.0052 could not be told from noise)
    own = (cuda_timer.warmup_ms, cuda_timer.hold_factor)
    settings = {"A": own, "B": (opts.warmup_ms, opts.hold_factor), "C": own}
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, probe "
          f"{'on' if cuda_timer.probe.active else 'off'}; settings (warm-up ms, hold factor): "
          + ", ".join(f"{k} {v}" for k, v in settings.items()))
    print("fixed costs (ms, median): " + ", ".join(
        f"{k} {v:.3f}" for k, v in fixed_costs(torch, timer, cuda_timer).items()))
    print(f"{'workload':22s} {'':1s} {'run ms':>7s} {'samples':>7s} {'median':>8s} {'calls':>7s} "
          f"{'holds':>7s} {'estim':>6s} {'batches':>7s} {'l2':>5s} {'flush':>5s}  (ms; medians "
          f"over {opts.runs} runs, A, B and C in turn)")
    totals = collections.defaultdict(collections.Counter)
    for name, (fn, target, source) in workloads(torch).items():
        fn()
        torch.cuda.synchronize()
        rows = collections.defaultdict(list)
        for _ in range(opts.runs):
            for key, (warmup_ms, hold_factor) in settings.items():
                cuda_timer.warmup_ms, cuda_timer.hold_factor = warmup_ms, hold_factor
                before = dict(clock.seconds)
                holds.clear()
                t0 = time.perf_counter()
                samples = cuda_timer.run(fn, before_each=lambda i: target.copy_(source))
                wall = (time.perf_counter() - t0) * 1e3
                part = {k: (clock.seconds[k] - before.get(k, 0.0)) * 1e3 for k in clock.seconds}
                rows[key].append({"wall": wall, "samples": len(samples),
                                  "median": statistics.median(samples), "calls": sum(samples),
                                  "holds": sum(holds), **part})
        for key, runs in rows.items():
            med = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in runs[0]}
            totals[key].update(med)
            print(f"{name:22s} {key} {med['wall']:7.1f} {med['samples']:7.0f} "
                  f"{med['median']:8.4f} {med['calls']:7.2f} {med['holds']:7.2f} "
                  f"{med.get('estimate', 0):6.1f} {med.get('batches', 0):7.1f} "
                  f"{med.get('l2_reset', 0) + med.get('l2_check', 0):5.1f} "
                  f"{med.get('probe_flush', 0):5.1f}")
        a, b, c = (statistics.median(r["median"] for r in rows[k]) for k in ("A", "B", "C"))
        print(f"{'':22s}   B/A median of the calls {b / a:.4f}  (control C/A {c / a:.4f})")
    for key, t in totals.items():
        print(f"{'all':22s} {key} {t['wall']:7.1f} {t['samples']:7.0f} {'':8s} {t['calls']:7.2f} "
              f"{t['holds']:7.2f} {t['estimate']:6.1f} {t['batches']:7.1f} "
              f"{t['l2_reset'] + t['l2_check']:5.1f} {t['probe_flush']:5.1f}")
    print("holds: a run's GPU holds, summed (each hold factor x the last batch's enqueue, within "
          f"{timer.MIN_HOLD_MS}-{timer.MAX_HOLD_MS} ms; a timer's first {timer.FIRST_HOLD_MS} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
