"""In-process timing of a call with CUDA events, L2 scrubbed between calls.

This is the first-version timer; the CUPTI probe's records are the trusted source once present,
and this timer stays as their cross-check. Repetitions go on, in batches, until the 95%
confidence interval of the median is within REL_HALF_WIDTH of it, or the case's time budget
is spent.
"""

import math
import statistics
import time

import torch

L2_SCRUB_BYTES = 256 * 1024 * 1024
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

    def _batch(self, fn, reps):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.scrub.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize(self.device)
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]

    def run(self, fn):
        """Return a list of per-call milliseconds."""
        self._estimate_ms(fn)
        t0 = time.perf_counter()
        samples = []
        while len(samples) < self.max_reps:
            samples += self._batch(fn, min(self.batch, self.max_reps - len(samples)))
            if len(samples) < self.min_reps:
                continue
            if converged(samples) or (time.perf_counter() - t0) * 1e3 >= self.budget_ms:
                break
        return samples
