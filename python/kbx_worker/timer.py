"""In-process timing of a call with CUDA events, L2 scrubbed between calls.

This is the first-version timer; the CUPTI probe's records are the trusted source once present,
and this timer stays as their cross-check.
"""

import time

import torch

L2_SCRUB_BYTES = 256 * 1024 * 1024


class CudaTimer:
    """Times a zero-argument callable: warm-up, then repetitions, each after an L2 scrub."""

    def __init__(self, device, warmup_ms=25.0, budget_ms=250.0, min_reps=10, max_reps=500):
        self.device = device
        self.warmup_ms = warmup_ms
        self.budget_ms = budget_ms
        self.min_reps = min_reps
        self.max_reps = max_reps
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

    def run(self, fn):
        """Return a list of per-call milliseconds."""
        est = max(self._estimate_ms(fn), 1e-3)
        reps = int(min(self.max_reps, max(self.min_reps, self.budget_ms / est)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.scrub.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize(self.device)
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]
