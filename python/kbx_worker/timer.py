"""In-process timing of a call with CUDA events, L2 scrubbed between calls.

This is the first-version timer; the CUPTI probe's records are the trusted source once present,
and this timer stays as their cross-check. Repetitions go on, in batches, until the 95%
confidence interval of the median is within REL_HALF_WIDTH of it, or the case's time budget
is spent.
"""

import ctypes
import math
import os
import statistics
import time

import torch

L2_SCRUB_BYTES = 256 * 1024 * 1024
# How long the GPU is held at the start of each batch of timed calls while the host queues them.
FIRST_HOLD_MS, MIN_HOLD_MS, MAX_HOLD_MS = 5.0, 0.5, 50.0

# The timing functions as they were before any candidate code ran: the timer calls these, and
# tampered() names any that a candidate replaced.
_ORIGINALS = {
    "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
    "torch.cuda.Event.record": torch.cuda.Event.record,
    "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
    "torch.cuda.synchronize": torch.cuda.synchronize,
    "time.perf_counter": time.perf_counter,
}


def _current(name):
    obj = {"torch": torch, "time": time}[name.split(".")[0]]
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


def tampered():
    """Names of timing functions that are no longer the ones the worker started with."""
    return [name for name, fn in _ORIGINALS.items() if _current(name) is not fn]
REL_HALF_WIDTH = 0.01
Z95 = 1.959964


def median_interval(samples):
    """Distribution-free 95% confidence interval of the median, from order statistics:
    (lo, hi), or None with fewer than 6 samples. timing::median_interval in C++ is the same."""
    n = len(samples)
    if n < 6:
        return None
    s = sorted(samples)
    half = Z95 * math.sqrt(n) / 2
    lo_rank = max(1, math.floor(n / 2 - half))  # 1-based ranks
    hi_rank = min(n, math.ceil(n / 2 + half) + 1)
    return s[lo_rank - 1], s[hi_rank - 1]


def converged(samples, rel=REL_HALF_WIDTH):
    """Whether the median's 95% interval has a half-width of at most rel times the median."""
    ci = median_interval(samples)
    if ci is None:
        return False
    med = statistics.median(samples)
    return med > 0 and (ci[1] - ci[0]) / 2 <= rel * med


class ProbeMarks:
    """The CUPTI probe's markers when the worker runs under it: each timed call is pushed with
    an id of its own, so the supervisor can find that call's GPU work in the probe's records.
    Inert (every method a no-op) without the probe."""

    def __init__(self):
        self.lib = None
        self.next_id = 1
        path = os.environ.get("KBX_PROBE_LIB")
        if not path:
            return
        try:
            lib = ctypes.CDLL(path)  # already loaded by CUDA through CUDA_INJECTION64_PATH
            lib.kbx_probe_push.argtypes = [ctypes.c_ulonglong]
            lib.kbx_probe_push.restype = None
            lib.kbx_probe_pop.restype = None
            lib.kbx_probe_flush.restype = ctypes.c_int
            lib.kbx_probe_active.restype = ctypes.c_int
            if lib.kbx_probe_active():
                self.lib = lib
        except (OSError, AttributeError):
            self.lib = None

    @property
    def active(self):
        return self.lib is not None

    HARNESS = 1 << 62  # ids of the timer's own work (L2 scrub, loading values): not calls

    def push(self, harness=False):
        """Starts tagging this thread's launches; returns the id (0 when inert). The timer's own
        work is tagged too (harness=True), since the GPU may still run it after the next call's
        marker: untagged, it would look like work from another thread."""
        if self.lib is None:
            return 0
        call_id = self.next_id | (self.HARNESS if harness else 0)
        self.next_id += 1
        self.lib.kbx_probe_push(call_id)
        return call_id

    def pop(self):
        if self.lib is not None:
            self.lib.kbx_probe_pop()

    def flush(self):
        if self.lib is not None:
            self.lib.kbx_probe_flush()


class CudaTimer:
    """Times a zero-argument callable: warm-up, then repetitions, each after an L2 scrub."""

    def __init__(self, device, warmup_ms=25.0, budget_ms=500.0, min_reps=10, max_reps=2000,
                 batch=10):
        self.device = device
        self.warmup_ms = warmup_ms
        self.budget_ms = budget_ms
        self.min_reps = min_reps
        self.max_reps = max_reps
        self.batch = batch
        self.scrub = torch.empty(L2_SCRUB_BYTES // 4, dtype=torch.int32, device=device)
        self.marker = torch.empty(1, dtype=torch.int32, device=device)
        self.probe = ProbeMarks()  # after CUDA has started: the probe is initialised by then
        self.last_ids = []  # probe ids of the last run()'s calls, one per sample
        self.last_host_ms = []  # host time of each of the last run()'s calls (launch cost)
        self.cycles_per_ms = None  # of the GPU's clock, measured on first use
        self.hold_ms = FIRST_HOLD_MS

    def _measure_cycles_per_ms(self):
        sync_all = _ORIGINALS["torch.cuda.synchronize"]
        sync_all(self.device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        cycles = 2_000_000
        _ORIGINALS["torch.cuda.Event.record"](start)
        torch.cuda._sleep(cycles)
        _ORIGINALS["torch.cuda.Event.record"](end)
        sync_all(self.device)
        ms = _ORIGINALS["torch.cuda.Event.elapsed_time"](start, end)
        return cycles / ms if ms > 0 else 1e6

    def _hold(self):
        """Keeps the stream busy for about hold_ms, so that a whole batch of calls is queued
        behind it before the GPU reaches the first: the calls then run back to back on the GPU,
        and their times do not depend on how busy the host's CPU is (nvbench's blocking kernel)."""
        if self.cycles_per_ms is None:
            self.cycles_per_ms = self._measure_cycles_per_ms()
        torch.cuda._sleep(max(1, int(self.hold_ms * self.cycles_per_ms)))

    def _estimate_ms(self, fn):
        torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        calls = 0
        while calls < 3 or (time.perf_counter() - t0) * 1e3 < self.warmup_ms:
            fn()
            calls += 1
            if calls >= 1000:
                break
            torch.cuda.synchronize(self.device)
        return (time.perf_counter() - t0) * 1e3 / calls

    def _batch(self, fn, reps, before_each=None):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ids = []
        record, sync_all = _ORIGINALS["torch.cuda.Event.record"], _ORIGINALS["torch.cuda.synchronize"]
        elapsed = _ORIGINALS["torch.cuda.Event.elapsed_time"]
        clock = _ORIGINALS["time.perf_counter"]
        host_ms = []
        t_enqueue = clock()
        for i in range(reps):
            self.probe.push(harness=True)
            if i == 0:
                self._hold()
            if before_each is not None:
                before_each(len(self.last_ids) + i)
            self.scrub.zero_()
            self.probe.pop()
            ids.append(self.probe.push())
            t_host = clock()
            record(starts[i])
            fn()
            record(ends[i])
            host_ms.append((clock() - t_host) * 1e3)
            self.probe.pop()
        # The end of the last call on the timed stream, as the probe sees it: work of a call
        # that is still running after this marker (or after the next call's scrub) escaped it.
        self.probe.push(harness=True)
        self.marker.zero_()
        self.probe.pop()
        enqueue_ms = (clock() - t_enqueue) * 1e3
        # Next batch: hold long enough to queue it all, with a margin; never very long.
        self.hold_ms = min(MAX_HOLD_MS, max(MIN_HOLD_MS, 2.0 * enqueue_ms))
        sync_all(self.device)
        self.probe.flush()
        self.last_ids += ids
        self.last_host_ms += host_ms
        return [elapsed(s, e) for s, e in zip(starts, ends)]

    def run(self, fn, before_each=None):
        """Return a list of per-call milliseconds. before_each(i), when given, runs before the
        i-th timed call, outside its timed window (before the L2 scrub)."""
        self._estimate_ms(fn)
        t0 = time.perf_counter()
        self.last_ids = []
        self.last_host_ms = []
        samples = []
        while len(samples) < self.max_reps:
            samples += self._batch(fn, min(self.batch, self.max_reps - len(samples)), before_each)
            if len(samples) < self.min_reps:
                continue
            if converged(samples) or (time.perf_counter() - t0) * 1e3 >= self.budget_ms:
                break
        return samples
