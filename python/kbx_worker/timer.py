"""In-process timing of a call with CUDA events, L2 scrubbed between calls.

This is the first-version timer; the CUPTI probe's records are the trusted source once present,
and this timer stays as their cross-check. Repetitions go on, in batches, until the 95%
confidence interval of the median is within REL_HALF_WIDTH of it, or the case's time budget
is spent.
"""

import collections
import ctypes
import math
import os
import random
import statistics
import time
import warnings

import torch

L2_SCRUB_BYTES = 256 * 1024 * 1024
# How long the GPU is held at the start of each batch of timed calls while the host queues them.
FIRST_HOLD_MS, MIN_HOLD_MS, MAX_HOLD_MS = 5.0, 0.5, 50.0
# The next batch's hold, in times the last batch's enqueue: a margin for a host slower at the next
# batch (KBX_TIMER_HOLD_FACTOR sets a candidate's: an experiment, bench/timer_overhead.py)
HOLD_FACTOR = 2.0
# The fewest timed calls of a call so slow that min_reps of them would overrun the case's budget:
# enough for the median's interval (6 samples) and for every value variant of a candidate's case
# (four) to come up. A 300 ms eigendecomposition took 10 calls plus 3 of warm-up per case, most
# of the GPU's timing slot in a run of the whole suite on the H200.
SLOW_MIN_REPS = 6
# The warm-up before a case's timed calls: at least one call and this long (caches, clocks,
# and the estimate that sizes the batches). The timing slot keeps the GPU busy from one holder to
# the next, so its clocks are already up: 10 ms (25 ms until session 10; at 4 full cases a task
# and two sides, 25 ms was 0.2 s of the slot per task, a fifth of it). One call suffices for a
# slow one (until session 11 it was two): the case's judged call with the same shapes ran just
# before (compiles, autotuning, allocations done), and two 100 ms linear-algebra calls per case
# and side were 0.8 s of the slot per task.
WARMUP_MS = 10.0
WARMUP_MIN_CALLS = 1
# KBX_TIMER_KEEP_OUTPUTS=K (an experiment, off by default; kbx passes it to the candidates' and
# the references' timers alike): call i of a batch runs with the outputs of the i % (K + 1) calls
# before it still alive, so that the caching allocator gives consecutive calls' outputs K + 1
# different blocks instead of the one block it hands back every time. Session 38 on an H100 saw
# identical memory-bound calls 13-17% apart between the reference's worker and a candidate's,
# every sample of one timing in the same state (bench/two_states.py), and guessed the output's
# place relative to the inputs (bench/placement_gpu.py): with the median over several blocks a
# timing would no longer be one draw of it. Outputs over KEEP_OUTPUTS_MAX_BYTES (all K together),
# or that are not a few tensors, are not kept.
KEEP_OUTPUTS_MAX_BYTES = 1 << 30

# Before a case's timed batches the timer checks that no other CUDA context has work on the GPU:
# without MPS the GPU time-slices between contexts, and a frozen job's kernels already queued keep
# running. It times SETTLE_BURST copies of its L2 scrub back to back: alone, they take alike
# times; beside another context's work one of them waits out its time slice. When they differ,
# it waits SETTLE_PAUSE_S (the other work drains) and checks again, up to SETTLE_MAX_S; work that
# outlasts that is a steady load (a neighbour that queued seconds of work, another user's
# process): the timer says so (last_contended) and its later cases check once, without waiting.
# On the H200 (session 30, bench/neighbour_gpu.py) another process's matmuls, running or queued
# and frozen, doubled calls of 2.7 and 21 ms (1.95x, 2.2x) and left calls of 0.34 ms or less
# alone (their batches fit between its slices): a hostile candidate could slow the eager
# baselines timed beside it, every speedup of its method up. Eight scrubs (0.5 ms) never saw it
# (nor in session 17); the burst is now about 10 ms, longer than a time slice. The reference
# worker's eager and compile baselines always settle (a contended one is timed again alone, at
# the run's end). A candidate's timed cases settle too (since session 31; KBX_TIMER_SETTLE=0
# turns it off), those whose calls take SETTLE_MIN_CALL_MS or more: shorter calls fit between
# another context's slices, so that only a few of their samples meet one and the median stays
# (0.036 and 0.34 ms calls unchanged on the H200). A contended case makes kbx run the job again
# alone: a candidate could otherwise queue seconds of kernels at its import to slow the timed
# calls of the jobs beside it, a gain wherever a candidate is scored against its neighbours (an
# RL loop's group of samples).
SETTLE_BURST = 160
SETTLE_PAUSE_S = 0.02
SETTLE_MAX_S = 1.0
SETTLE_MIN_CALL_MS = 0.25
SETTLE_HOLD_MS = 1.0  # the burst's head start on the GPU (_burst_ms)


def settle_enabled(environ=os.environ):
    """Whether timed batches settle first (on unless KBX_TIMER_SETTLE=0)."""
    return environ.get("KBX_TIMER_SETTLE", "1") != "0"


def burst_contended(burst_ms):
    """Whether a burst of equal GPU tasks shows another context's work: the slowest took more than
    twice the fastest and 50 us more (a time slice of another context is a millisecond or more)."""
    return bool(burst_ms) and max(burst_ms) > 2.0 * min(burst_ms) + 0.05

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


def cuda_in_use(device):
    """Whether `device` is a CUDA device and this process has started CUDA."""
    return (str(device).startswith("cuda") and torch.cuda.is_available()
            and torch.cuda.is_initialized())


def gpu_ooms(device):
    """How many of this process's GPU allocations found no room so far: the caching allocator's
    num_ooms, which counts a failure whether or not the caller caught it; 0 off CUDA or before
    CUDA started. PyTorch's cuDNN convolution catches its workspace's failed allocation, runs the
    next execution plan (one that needs less workspace) and keeps that plan for the shape for
    the rest of the process: up to 9.5x slower, also once memory is free again (session 41 on an
    H100, bench/conv_workspace_gpu.py). A timing from such a process may hold that slower plan."""
    if not cuda_in_use(device):
        return 0
    return int(torch.cuda.memory_stats(device).get("num_ooms", 0))


def tampered():
    """Names of timing functions that are no longer the ones the worker started with."""
    return [name for name, fn in _ORIGINALS.items() if _current(name) is not fn]


# The CUDA driver's persisting-L2 controls (cuda.h): the limit, the stream attribute and its
# value (CUlaunchAttributeValue, 64 bytes in CUDA 12 and 13; a larger buffer is passed).
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
_ATTR_VALUE_BYTES = 256


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int)]


def _load_driver():
    """The driver's persisting-L2 functions; None where there is no CUDA driver (CPU machines).
    Looked up once, by the first L2Guard, which the worker makes right after CUDA starts and
    before the candidate is imported (not at import: the warm parent imports this module and
    must not load the driver before it forks)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        fns = {name: getattr(lib, name) for name in (
            "cuCtxGetLimit", "cuCtxSetLimit", "cuCtxResetPersistingL2Cache",
            "cuStreamGetAttribute", "cuStreamSetAttribute")}
    except (OSError, AttributeError):
        return None
    fns["cuCtxGetLimit"].argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    fns["cuCtxSetLimit"].argtypes = [ctypes.c_int, ctypes.c_size_t]
    fns["cuCtxResetPersistingL2Cache"].argtypes = []
    fns["cuStreamGetAttribute"].argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    fns["cuStreamSetAttribute"].argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    for fn in fns.values():
        fn.restype = ctypes.c_int
    return fns


_DRIVER_CACHE = []


def _driver():
    if not _DRIVER_CACHE:
        _DRIVER_CACHE.append(_load_driver())
    return _DRIVER_CACHE[0]


class L2Guard:
    """Keeps persisting L2 off while timing: the persisting carve-out at 0 bytes, persisting
    lines reset to normal, the timed stream's access-policy window cleared. A candidate that
    marks its working set persisting makes an L2 scrub by memset useless (persisting lines
    survive it) and reads from L2 at a multiple of HBM bandwidth.

    check() reads the settings (cheap host calls), notes any change it did not make itself and
    puts them back; reset() also resets the persisting lines. Inert on the CPU, without a
    driver, or where a call fails (a GPU without persisting L2 support)."""

    def __init__(self, driver=None):
        self.driver = driver if driver is not None else _driver()
        self.found = []  # what a candidate changed, as readable strings (deduplicated)
        self.errors = []  # a failed limit call turns the guard off; a failed stream call, the
        self.window_errors = []  # stream part only (the legacy default stream may refuse it)
        self._value = ctypes.create_string_buffer(_ATTR_VALUE_BYTES)
        self._zero = ctypes.create_string_buffer(_ATTR_VALUE_BYTES)

    @property
    def active(self):
        return self.driver is not None and not self.errors

    def _call(self, name, *args):
        rc = self.driver[name](*args)
        if rc != 0:
            (self.window_errors if "Stream" in name else self.errors).append(
                f"{name}: CUresult {rc}")
        return rc == 0

    def _note(self, what):
        kind = what.split(" (")[0]
        if not any(f.split(" (")[0] == kind for f in self.found):
            self.found.append(what)

    def check(self, stream=None, repair=True):
        """Notes and undoes persisting-L2 settings that someone else made; returns True when it
        found any. stream: the timed stream's handle (an int), or None for torch's current."""
        if not self.active:
            return False
        limit = ctypes.c_size_t(0)
        seen = False
        if self._call("cuCtxGetLimit", ctypes.byref(limit), CU_LIMIT_PERSISTING_L2_CACHE_SIZE) \
                and limit.value != 0:
            self._note(f"persisting-L2 carve-out (cudaLimitPersistingL2CacheSize = {limit.value})")
            seen = True
            if repair:
                self._call("cuCtxSetLimit", CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
                self._call("cuCtxResetPersistingL2Cache")
        if self.window_errors:
            return seen
        handle = ctypes.c_void_p(self._stream(stream))
        ctypes.memset(self._value, 0, _ATTR_VALUE_BYTES)
        if self._call("cuStreamGetAttribute", handle, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                      self._value):
            window = _AccessPolicyWindow.from_buffer(self._value)
            if window.num_bytes != 0:
                self._note(f"access-policy window on the timed stream ({window.num_bytes} bytes, "
                           f"hit property {window.hitProp})")
                seen = True
                if repair:
                    self._call("cuStreamSetAttribute", handle,
                               CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, self._zero)
                    self._call("cuCtxResetPersistingL2Cache")
        return seen

    def reset(self, stream=None):
        """check(), then the persisting lines reset to normal and the carve-out set to 0 whatever
        was read (before each batch, with the GPU idle)."""
        seen = self.check(stream)
        if self.active:
            self._call("cuCtxResetPersistingL2Cache")
            self._call("cuCtxSetLimit", CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
        return seen

    @staticmethod
    def _stream(stream):
        if stream is not None:
            return stream
        return torch.cuda.current_stream().cuda_stream


_GUARD = None


def l2_guard():
    """The process's L2Guard. The worker makes it (and so sets the carve-out to 0) when CUDA
    starts, before the candidate is imported: any persisting setting seen later is not the
    harness's."""
    global _GUARD
    if _GUARD is None:
        _GUARD = L2Guard()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            _GUARD.reset()
            _GUARD.found = []  # what was there before the candidate ran is not its doing
    return _GUARD


def variant_rounds(rng, k):
    """Endless order of value variants 0..k-1 for timed calls: rounds that are each a random
    permutation of all k, never the same variant twice in a row (also across rounds), the first
    never 0 (the values the warm-up ran on). Every variant comes within each k calls, so a
    variant's first timed call is early, and no variant waits long."""
    prev = 0
    if k < 2:
        while True:
            yield 0
    while True:
        order = list(range(k))
        rng.shuffle(order)
        if order[0] == prev:
            j = rng.randrange(1, k)
            order[0], order[j] = order[j], order[0]
        yield from order
        prev = order[-1]


class Reservoir:
    """Picks one item uniformly from a stream of unknown length: offer() says whether the n-th
    offered item replaces the kept one (probability 1/n). The timer's judged call is one of a
    case's timed calls on the judged values, chosen this way at run time."""

    def __init__(self, rng):
        self.rng = rng
        self.seen = 0

    def offer(self):
        self.seen += 1
        return self.rng.randrange(self.seen) == 0
REL_HALF_WIDTH = 0.01
# The budget of a host-bound call's timed batches (one that waits on the host inside), at most:
# they run with every other job of the machine frozen (the quiet host), so their time is the
# whole pipeline's, not only the slot's. In session 25's run of the 184 references on the H200
# the 76 host-bound cases took 51 s of the 116 s of timed loops, most of them cut by the 500 ms
# budget rather than converged; at 250 ms a call of up to 4 ms still gets 60 samples or more.
HOST_BOUND_BUDGET_MS = 250.0
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


def waited_for_hold(host_ms, hold_ms):
    """Whether a batch's first call waited on the host for the GPU hold before it (host_ms: the
    batch's calls' host times): it took at least half the hold longer than the batch's other
    calls (their median). Such a call synchronises inside where torch's sync debug mode does not
    see it (cuSOLVER's and MAGMA's own waits: det, lu, qr on the H100 of session 37), so no hold
    can queue it ahead; each later hold of its case would only be waited for again, and grows to
    MAX_HOLD_MS since the wait counts in the batch's enqueue time (about 2 s of a warm run's slot
    over those cases, as much again for their eager baselines). Holds below FIRST_HOLD_MS are
    left alone: a first call's own jitter could reach half of one."""
    if hold_ms < FIRST_HOLD_MS or len(host_ms) < 2:
        return False
    return host_ms[0] - statistics.median(host_ms[1:]) >= hold_ms / 2


def output_bytes(result, limit=16):
    """Bytes of the tensors a call returned (a tensor, or a tuple, list or dict of at most limit
    of them); None for anything else, which keep_alive does not keep. Exact types only: a
    subclass's methods are the candidate's code, which must not run in the timer's own work."""
    if type(result) is torch.Tensor:
        return result.untyped_storage().nbytes()
    if type(result) not in (tuple, list, dict) or len(result) > limit:
        return None
    total = 0
    for item in (dict.values(result) if type(result) is dict else result):
        if item is None:
            continue
        if type(item) is not torch.Tensor:
            return None
        total += item.untyped_storage().nbytes()
    return total


def keep_alive(kept, result, count, ring):
    """Adds a call's output to kept (the outputs alive through the next call), then drops the
    oldest down to count of them; an output that ring of them could not hold within
    KEEP_OUTPUTS_MAX_BYTES, or that output_bytes cannot size, empties it instead."""
    size = output_bytes(result)
    if size is None or size * ring > KEEP_OUTPUTS_MAX_BYTES:
        kept.clear()
        return
    kept.append(result)
    while len(kept) > count:
        kept.popleft()


def reps_for(estimate_ms, min_reps, batch, budget_ms):
    """(fewest timed calls, calls per batch) for a call of about estimate_ms: min_reps and batch,
    fewer for a call so slow that they would overrun the case's budget, never fewer than
    SLOW_MIN_REPS."""
    if estimate_ms <= 0:
        return min_reps, batch
    fit = max(SLOW_MIN_REPS, math.ceil(budget_ms / estimate_ms))
    return min(min_reps, fit), min(batch, fit)


def another_batch_fits(spent_ms, samples, batch, budget_ms):
    """Whether a batch of `batch` more calls, at the pace so far, still ends within the case's
    budget. Checking only whether the budget was spent let a slow call overrun it up to twice (a
    batch of ten 50 ms eigendecompositions that ended just under 500 ms started another)."""
    if samples <= 0:
        return spent_ms < budget_ms
    return spent_ms + spent_ms / samples * batch <= budget_ms


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


# What c10's warn_or_error_on_sync says in sync debug mode "warn". Only that: torch's first switch
# to the mode gave an unrelated warning of its own on the H200 (session 11: every job's first
# timed case then looked host-bound).
SYNC_WARNING = "called a synchronizing CUDA operation"


# The host's speed before a host-bound call's batches: the best of HOST_LOOP_TRIES runs of a
# fixed pure-Python loop (about 0.3 ms each on the H200's host). A host-bound call's time holds
# host gaps, and session 17's and 18's repeatability runs saw a whole run's host gaps move by up
# to 2x (masked_select); this says whether the host itself was slower then.
HOST_LOOP_N, HOST_LOOP_TRIES = 5000, 3


def host_loop_ms(n=HOST_LOOP_N, tries=HOST_LOOP_TRIES, clock=time.perf_counter):
    """Milliseconds of the fastest of `tries` runs of an n-step integer loop."""
    best = math.inf
    for _ in range(tries):
        t0 = clock()
        acc = 0
        for i in range(n):
            acc += i * i
        best = min(best, clock() - t0)
    return best * 1e3


def _calls_synchronising(fn, get_mode=None, set_mode=None):
    """Calls fn once; returns whether it waited for the GPU on the host inside (a device-to-host
    copy, .item(), nonzero, masked_select, a synchronize, a linear-algebra info check): torch's
    sync debug mode warns at each such wait. The first such warning answers the question, so the
    mode goes off there and the rest of the call runs at its own speed: a warning at every wait
    made a host-bound call up to 10x slower (session 33 on the H200: solve_symmetric_ldl's
    n=2048 call 1.76 s against 0.17 s; 9 s of the GPU's timing slot over the 184 references).
    get_mode, set_mode: tests' own (torch.cuda's otherwise)."""
    get_mode = get_mode or torch.cuda.get_sync_debug_mode
    set_mode = set_mode or torch.cuda.set_sync_debug_mode
    previous = get_mode()
    seen = []

    def on_warning(message, category, filename, lineno, file=None, line=None):
        if not seen and SYNC_WARNING in str(message):
            seen.append(True)
            set_mode(0)

    with warnings.catch_warnings():  # restores showwarning and the filters on the way out
        warnings.simplefilter("always")
        warnings.showwarning = on_warning
        set_mode("warn")
        try:
            fn()
        finally:
            set_mode(previous)
    return bool(seen)


class CudaTimer:
    """Times a zero-argument callable: warm-up, then repetitions, each after an L2 scrub."""

    def __init__(self, device, warmup_ms=WARMUP_MS, budget_ms=500.0, min_reps=10, max_reps=2000,
                 batch=10, host_bound_budget_ms=HOST_BOUND_BUDGET_MS, hold_factor=HOLD_FACTOR,
                 keep_outputs=0):
        self.device = device
        self.keep_outputs = int(keep_outputs)  # KEEP_OUTPUTS_MAX_BYTES's note; 0: none kept
        self.warmup_ms = warmup_ms
        self.hold_factor = hold_factor
        self.budget_ms = budget_ms
        self.host_bound_budget_ms = host_bound_budget_ms
        self.min_reps = min_reps
        self.max_reps = max_reps
        self.batch = batch
        self.scrub = torch.empty(L2_SCRUB_BYTES // 4, dtype=torch.int32, device=device)
        self.marker = torch.empty(1, dtype=torch.int32, device=device)
        self.probe = ProbeMarks()  # after CUDA has started: the probe is initialised by then
        self.l2 = l2_guard()  # persisting L2 kept off; what a candidate set is in l2.found
        self.last_ids = []  # probe ids of the last run()'s calls, one per sample
        self.last_host_ms = []  # host time of each of the last run()'s calls (launch cost)
        self.cycles_per_ms = None  # of the GPU's clock, measured on first use
        self.hold_ms = FIRST_HOLD_MS
        # Of the last run()'s batches: how many, and how many took longer to queue than their
        # hold lasted (the GPU may then have caught up with the host: a call that launches slower
        # than it runs got launch gaps inside it, which follow the host's speed)
        self.last_batches = 0
        self.last_short_holds = 0
        self.last_hold_waited = False  # the last batch's first call waited for its hold
        self.last_phases = {}  # seconds of the last run() per step: estimate, batches, flush
        self.last_budget_ms = budget_ms  # the last run()'s budget (less for a host-bound call)
        # The supervisor's quiet host (proto.Channel: ask_quiet, end_quiet) for a call that waits
        # on the host inside: its timed batches run with every other job frozen. None: never.
        self.quiet = None
        self.last_quiet_wait_s = 0.0  # the last run()'s wait for the answer to quiet_wanted
        self.last_host_loop_ms = None  # host_loop_ms() before a host-bound run()'s batches
        self.last_quiet = False  # whether the last run()'s batches ran on a quiet host
        # Whether the last run()'s batches began with another context's work still on the GPU
        # (the settle gave up), and the seconds the settle waited for it to drain.
        self.last_contended = False
        self.last_settle_s = 0.0
        self.settles = settle_enabled()  # settle() before the batches
        self.settle_min_ms = SETTLE_MIN_CALL_MS  # of calls at least this long (the warm-up's)
        # KBX_QUIET_TIMING=all (set by the supervisor): every timed loop asks for a quiet host
        self.quiet_all = os.environ.get("KBX_QUIET_TIMING") == "all"
        # Keep the quiet host from one run() to the next (a job's timed cases in a row; end_quiet
        # ends it): a case asked while the hush lasts ("still") skips the settle when one already
        # passed in this hush, since no other job could queue GPU work in between.
        self.keep_quiet = False
        self.quiet_held = False  # a hush asked for and not yet ended
        self.hush_settled = False  # a settle found the GPU free during the hush held now
        self.last_settle_skipped = False

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

    def _spin(self, ms):
        """Keeps the stream busy for about ms (a GPU sleep, its clock measured on first use)."""
        if self.cycles_per_ms is None:
            self.cycles_per_ms = self._measure_cycles_per_ms()
        torch.cuda._sleep(max(1, int(ms * self.cycles_per_ms)))

    def _hold(self):
        """Keeps the stream busy for about hold_ms, so that a whole batch of calls is queued
        behind it before the GPU reaches the first: the calls then run back to back on the GPU,
        and their times do not depend on how busy the host's CPU is (nvbench's blocking kernel)."""
        self._spin(self.hold_ms)

    def _burst_ms(self):
        """Times SETTLE_BURST back-to-back L2 scrubs (the timer's own work, tagged as such),
        queued behind a short hold: a pause of the host while it queues them would otherwise
        leave the GPU idle between two scrubs, which would look like another context's slice."""
        record, sync_all = _ORIGINALS["torch.cuda.Event.record"], _ORIGINALS["torch.cuda.synchronize"]
        elapsed = _ORIGINALS["torch.cuda.Event.elapsed_time"]
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(SETTLE_BURST + 1)]
        sync_all(self.device)
        self.probe.push(harness=True)
        self._spin(SETTLE_HOLD_MS)
        record(marks[0])
        for k in range(SETTLE_BURST):
            self.scrub.zero_()
            record(marks[k + 1])
        self.probe.pop()
        sync_all(self.device)
        return [elapsed(a, b) for a, b in zip(marks, marks[1:])]

    def settle(self, burst=None, sleep=time.sleep, clock=time.perf_counter):
        """Waits until the GPU runs no other context's work (see SETTLE_BURST), at most
        SETTLE_MAX_S; returns (settled, seconds waited). burst, sleep, clock: tests' own."""
        burst = burst or self._burst_ms
        t0 = clock()
        while burst_contended(burst()):
            if getattr(self, "_steady_load", False) or clock() - t0 >= SETTLE_MAX_S:
                self._steady_load = True
                return False, clock() - t0
            sleep(SETTLE_PAUSE_S)
        return True, clock() - t0

    def _estimate_ms(self, fn):
        """Warm-up: (the time per call, whether the first call waited on the host inside). The
        latter is asked only when there is a quiet host to ask for."""
        torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        calls = 0
        host_bound = False
        while calls < WARMUP_MIN_CALLS or (time.perf_counter() - t0) * 1e3 < self.warmup_ms:
            if calls == 0 and self.quiet is not None:
                host_bound = _calls_synchronising(fn)
            else:
                fn()
            calls += 1
            if calls >= 1000:
                break
            torch.cuda.synchronize(self.device)
        return (time.perf_counter() - t0) * 1e3 / calls, host_bound

    def _batch(self, fn, reps, before_each=None, after_each=None, hold=True):
        """Times reps calls queued back to back; hold: behind a spin of hold_ms (_hold). A call
        that waits on the host inside cannot be queued ahead: its first call would only wait for
        the spin to end (up to MAX_HOLD_MS per batch, in the GPU's timing slot)."""
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ids = []
        record, sync_all = _ORIGINALS["torch.cuda.Event.record"], _ORIGINALS["torch.cuda.synchronize"]
        elapsed = _ORIGINALS["torch.cuda.Event.elapsed_time"]
        clock = _ORIGINALS["time.perf_counter"]
        host_ms = []
        first = len(self.last_ids)
        hold_at_head_ms = self.hold_ms if hold else 0.0
        self.l2.reset()  # the GPU is idle here: persisting lines and carve-out back to none
        t_enqueue = clock()
        result = None
        kept = collections.deque()  # earlier calls' outputs alive through this one (keep_outputs)
        for i in range(reps):
            self.probe.push(harness=True)
            if i > 0 and after_each is not None:
                after_each(first + i - 1, result)  # before the next values overwrite its inputs
            if i > 0 and self.keep_outputs > 0:
                keep_alive(kept, result, i % (self.keep_outputs + 1), self.keep_outputs)
            result = None
            if i == 0 and hold:
                self._hold()
                held_s = self.last_phases.get("holds", 0.0) + self.hold_ms / 1e3
                self.last_phases["holds"] = held_s
            self.l2.check()
            if before_each is not None:
                before_each(first + i)
            self.scrub.zero_()
            self.probe.pop()
            ids.append(self.probe.push())
            t_host = clock()
            record(starts[i])
            result = fn()
            record(ends[i])
            host_ms.append((clock() - t_host) * 1e3)
            self.probe.pop()
        # The end of the last call on the timed stream, as the probe sees it: work of a call
        # that is still running after this marker (or after the next call's scrub) escaped it.
        self.probe.push(harness=True)
        if after_each is not None:
            after_each(first + reps - 1, result)
        result = None
        kept.clear()
        self.l2.check()
        self.marker.zero_()
        self.probe.pop()
        enqueue_ms = (clock() - t_enqueue) * 1e3
        self.last_batches += 1
        self.last_short_holds += enqueue_ms > hold_at_head_ms
        self.last_hold_waited = hold and waited_for_hold(host_ms, hold_at_head_ms)
        if hold:  # next batch: hold long enough to queue it all, with a margin; never very long
            self.hold_ms = min(MAX_HOLD_MS, max(MIN_HOLD_MS, self.hold_factor * enqueue_ms))
        sync_all(self.device)
        t_flush = clock()
        self.probe.flush()
        self.last_phases["flush"] = self.last_phases.get("flush", 0.0) + clock() - t_flush
        self.last_ids += ids
        self.last_host_ms += host_ms
        return [elapsed(s, e) for s, e in zip(starts, ends)]

    def end_quiet(self):
        """Ends the quiet host this timer holds, if any (after a job's last timed case when
        keep_quiet is on; run() itself otherwise)."""
        if self.quiet_held and self.quiet is not None:
            self.quiet.end_quiet()
        self.quiet_held = False
        self.hush_settled = False

    def run(self, fn, before_each=None, after_each=None):
        """Return a list of per-call milliseconds. before_each(i), when given, runs before the
        i-th timed call, outside its timed window (before the L2 scrub); after_each(i, result)
        right after it, outside it too (before the next call's before_each), with what the call
        returned. Both run inside the timer's own probe-tagged work."""
        t_estimate = time.perf_counter()
        self.last_phases = {}
        estimate_ms, host_bound = self._estimate_ms(fn)
        budget_ms = min(self.budget_ms, self.host_bound_budget_ms) if host_bound else self.budget_ms
        self.last_budget_ms = budget_ms
        min_reps, batch = reps_for(estimate_ms, self.min_reps, self.batch, budget_ms)
        t0 = time.perf_counter()
        self.last_phases["estimate"] = t0 - t_estimate
        self.last_ids = []
        self.last_host_ms = []
        self.last_batches = self.last_short_holds = 0
        self.last_hold_waited = False
        samples = []
        # A call that waits on the host is timed from its first kernel to its last, host gaps
        # included: other jobs' CPU work would stretch them (up to 8x on the H200).
        wanted = host_bound or self.quiet_all
        if self.quiet_held and not wanted:
            self.end_quiet()  # a kept hush ends before a call timed without one
        t_ask = time.perf_counter()
        self.last_quiet = bool(wanted and self.quiet is not None
                               and self.quiet.ask_quiet(host_bound))
        kept = (self.last_quiet and self.quiet_held
                and bool(getattr(self.quiet, "quiet_kept", False)))
        if not kept:
            self.hush_settled = False
        self.quiet_held = self.last_quiet
        # From quiet_wanted to the answer: the supervisor freezes the other jobs (up to 50 ms
        # for their cgroups to report frozen) while this job holds the slot and waits.
        self.last_quiet_wait_s = time.perf_counter() - t_ask
        self.last_phases["quiet_wait"] = self.last_quiet_wait_s
        self.last_host_loop_ms = host_loop_ms() if host_bound else None
        if self.last_host_loop_ms is not None:
            self.last_phases["host_loop_ms"] = self.last_host_loop_ms  # not seconds
        try:
            self.last_settle_skipped = kept and self.hush_settled
            settles = (self.settles and estimate_ms >= self.settle_min_ms
                       and not self.last_settle_skipped)
            settled, self.last_settle_s = self.settle() if settles else (True, 0.0)
            self.hush_settled = self.hush_settled or (settles and settled and self.last_quiet)
            self.last_contended = not settled
            self.last_phases["settle"] = self.last_settle_s
            self.last_phases["contended"] = float(self.last_contended)
            t0 = time.perf_counter()  # the case's budget starts after the settle
            hold, waited_before = not host_bound, False
            while len(samples) < self.max_reps:
                samples += self._batch(fn, min(batch, self.max_reps - len(samples)), before_each,
                                       after_each, hold=hold)
                # a call that waited for its hold in two batches in a row (waited_for_hold; one
                # could be a pause of the host): the rest of the case without one
                hold = hold and not (waited_before and self.last_hold_waited)
                waited_before = self.last_hold_waited
                if len(samples) < min_reps:
                    continue
                if converged(samples) or not another_batch_fits(
                        (time.perf_counter() - t0) * 1e3, len(samples), batch, budget_ms):
                    break
        finally:
            if self.last_quiet and not self.keep_quiet:
                self.end_quiet()
        self.last_phases["batches"] = time.perf_counter() - t0
        self.last_phases["quiet"] = float(self.last_quiet)
        self.last_phases["samples"] = len(samples)
        return samples
