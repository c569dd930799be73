"""Stand-ins for the worker's channel and CUDA timer, for testing worker modes on the CPU."""


class Events:
    """Collects what a worker mode sends, as the supervisor would receive it."""

    def __init__(self):
        self.events = []

    def send(self, ev, **fields):
        self.events.append(dict(fields, ev=ev))


class StandInTimer:
    """CudaTimer's interface without CUDA: `reps` calls, before_each(i) before each and
    after_each(i, result) after each, and `ms` per call reported."""

    class _Probe:
        active = False

    def __init__(self, reps=4, ms=1.0):
        self.probe = self._Probe()
        self.last_ids = []
        self.last_host_ms = []
        self.reps = reps
        self.ms = ms
        self.calls = 0

    def run(self, fn, before_each=None, after_each=None):
        for i in range(self.reps):
            if before_each:
                before_each(i)
            result = fn()
            if after_each:
                after_each(i, result)
            self.calls += 1
        self.last_ids = [0] * self.reps
        self.last_host_ms = [self.ms / 10] * self.reps
        return [self.ms] * self.reps
