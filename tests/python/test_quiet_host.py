"""Issue 14: a host-bound timed call (one that waits on the host inside) asks the supervisor for
a quiet host (every other job frozen) for its timed batches, and gives it back after them, even
when a batch fails; a call that does not wait on the host never asks."""

import json
import os

import pytest

from kbx_worker import timer as timer_module
from kbx_worker.proto import Channel


class FakeQuiet:
    """The supervisor's side: grants (or refuses) a hush; one asked again before quiet_done is
    "still" unless `renewed` says the supervisor began it anew (past half its cap)."""

    def __init__(self, grant=True):
        self.grant, self.log, self.host_bound = grant, [], []
        self.hushed, self.renewed, self.quiet_kept = False, False, False

    def ask_quiet(self, host_bound=True):
        self.log.append("ask")
        self.host_bound.append(host_bound)
        self.quiet_kept = self.grant and self.hushed and not self.renewed
        self.hushed = self.grant
        return self.grant

    def end_quiet(self):
        self.log.append("end")
        self.hushed = False


def _timer(host_bound, quiet, batch=None, call_ms=1.0):
    """A CudaTimer without CUDA: its warm-up (which says calls take call_ms) and batches
    replaced, its control flow kept."""
    t = timer_module.CudaTimer.__new__(timer_module.CudaTimer)
    t.min_reps, t.max_reps, t.batch, t.budget_ms = 10, 2000, 10, 500.0
    t.host_bound_budget_ms = timer_module.HOST_BOUND_BUDGET_MS
    t.last_phases, t.last_ids, t.last_host_ms = {}, [], []
    t.quiet, t.last_quiet, t.quiet_all = quiet, False, False
    t.settles, t.settle_min_ms = True, timer_module.SETTLE_MIN_CALL_MS
    t.keep_quiet, t.quiet_held, t.hush_settled, t.last_settle_skipped = False, False, False, False

    def estimate(fn):
        return call_ms, host_bound

    def batches(fn, reps, before_each, after_each, hold=True):
        quiet.log.append("batch") if quiet is not None else None
        if batch is not None:
            batch()
        return [1.0] * reps

    def burst():  # an idle GPU: eight alike scrubs
        quiet.log.append("settle") if quiet is not None else None
        return [0.08] * 8

    t._estimate_ms, t._batch, t._burst_ms = estimate, batches, burst
    return t


def test_a_host_bound_call_is_timed_on_a_quiet_host():
    quiet = FakeQuiet()
    t = _timer(True, quiet)
    assert t.run(lambda: None)
    assert quiet.log[0] == "ask" and quiet.log[-1] == "end"
    assert quiet.log[1] == "settle"  # on the quiet host, before the first batch
    assert set(quiet.log[2:-1]) == {"batch"}
    assert t.last_quiet and t.last_phases["quiet"] == 1.0


def test_a_call_that_does_not_wait_on_the_host_never_asks():
    quiet = FakeQuiet()
    t = _timer(False, quiet)
    t.run(lambda: None)
    assert "ask" not in quiet.log and "end" not in quiet.log
    assert not t.last_quiet


def test_with_quiet_timing_all_every_timed_loop_asks_after_its_warm_up():
    """The question goes after the warm-up: asked before it (session 20 on the H200), the other
    jobs stayed frozen through every warm-up too, 18 s more in a run of the 184 references,
    and the references fell behind (their tasks took 43% longer, the warm run 226 s, not 196)."""
    quiet = FakeQuiet()
    t = _timer(False, quiet)
    t.quiet_all = True
    real_estimate = t._estimate_ms

    def estimate(fn):
        quiet.log.append("warm-up")
        return real_estimate(fn)

    t._estimate_ms = estimate
    t.run(lambda: None)
    assert quiet.log[:2] == ["warm-up", "ask"], quiet.log
    assert quiet.log[-1] == "end"
    assert t.last_quiet
    # the call only queues GPU work: the supervisor's own comparisons need not pause for it
    assert quiet.host_bound == [False]


def test_a_host_bound_call_says_so_when_it_asks():
    quiet = FakeQuiet()
    t = _timer(True, quiet)
    t.quiet_all = True
    t.run(lambda: None)
    assert quiet.host_bound == [True]


def test_a_refused_quiet_is_not_given_back():
    quiet = FakeQuiet(grant=False)
    t = _timer(True, quiet)
    t.run(lambda: None)
    assert quiet.log[0] == "ask" and "end" not in quiet.log
    assert not t.last_quiet


def test_the_quiet_ends_when_a_batch_fails():
    quiet = FakeQuiet()

    def fail():
        raise RuntimeError("the call failed")

    t = _timer(True, quiet, batch=fail)
    with pytest.raises(RuntimeError):
        t.run(lambda: None)
    assert quiet.log[-1] == "end"


def test_the_channel_asks_on_the_event_pipe_and_reads_the_answer_on_the_request_pipe():
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    channel = Channel(req_r, ev_w)
    os.write(req_w, b"quiet\nstill\nloud\n")
    assert channel.ask_quiet() is True and not channel.quiet_kept
    assert channel.ask_quiet() is True and channel.quiet_kept  # the same hush went on
    assert channel.ask_quiet(host_bound=False) is False and not channel.quiet_kept
    channel.end_quiet()
    os.close(req_w)
    assert channel.ask_quiet() is False  # the supervisor closed the pipe: no quiet host
    sent = [json.loads(line) for line in os.read(ev_r, 4096).decode().splitlines()]
    asked = {"ev": "quiet_wanted", "host_bound": True}
    assert sent == [asked, asked, dict(asked, host_bound=False), {"ev": "quiet_done"}, asked]


def test_a_kept_hush_settles_once_for_the_jobs_timed_cases_in_a_row():
    """With keep_quiet (a candidate's timed cases) the hush lasts from the first case to
    end_quiet: the first case settles, the next ones (answered "still": no other job ran in
    between) do not; the settle is not skipped for a case whose hush the supervisor began anew."""
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=3.0)
    t.keep_quiet = True
    for _ in range(3):
        assert t.run(lambda: None)
    assert quiet.log.count("ask") == 3 and quiet.log.count("settle") == 1
    assert "end" not in quiet.log and t.last_settle_skipped
    quiet.renewed = True  # past half the cap: a fresh hush, so a settle
    t.run(lambda: None)
    assert quiet.log.count("settle") == 2 and not t.last_settle_skipped
    t.end_quiet()
    assert quiet.log[-1] == "end" and quiet.log.count("end") == 1
    t.end_quiet()  # nothing held: nothing said
    assert quiet.log.count("end") == 1


def test_a_kept_hush_whose_first_settle_did_not_run_settles_at_the_next_case():
    """A first case too short to settle leaves the GPU unchecked: the next, longer case of the
    same hush settles."""
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=0.1)
    t.keep_quiet = True
    t.run(lambda: None)
    assert "settle" not in quiet.log
    t._estimate_ms = lambda fn: (3.0, True)
    t.run(lambda: None)
    assert quiet.log.count("settle") == 1


def test_a_kept_hush_after_a_contended_settle_checks_again():
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=3.0)
    t.keep_quiet = True
    checks = []
    t.settle = lambda: (checks.append(1), (False, 1.0))[1]
    t.run(lambda: None)
    t.run(lambda: None)
    assert len(checks) == 2 and t.last_contended


def test_without_keep_quiet_every_case_ends_its_hush_and_settles():
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=3.0)
    t.run(lambda: None)
    t.run(lambda: None)
    assert quiet.log.count("end") == 2 and quiet.log.count("settle") == 2


def test_the_quiet_ends_when_the_settle_fails():
    quiet = FakeQuiet()
    t = _timer(True, quiet)

    def broken():
        raise RuntimeError("CUDA error")

    t._burst_ms = broken
    try:
        t.run(lambda: None)
    except RuntimeError:
        pass
    assert quiet.log == ["ask", "end"]


def test_the_settle_is_on_unless_turned_off():
    assert timer_module.settle_enabled({})
    assert not timer_module.settle_enabled({"KBX_TIMER_SETTLE": "0"})
    assert timer_module.settle_enabled({"KBX_TIMER_SETTLE": "1"})
    quiet = FakeQuiet()
    t = _timer(True, quiet)
    t.settles = False
    assert t.run(lambda: None)
    assert "settle" not in quiet.log and t.last_settle_s == 0.0


def test_calls_too_short_to_meet_a_time_slice_whole_are_not_settled():
    # another context's slices stretch a few of their samples, not the median (H200, session 30)
    for call_ms, settles in ((0.1, False), (timer_module.SETTLE_MIN_CALL_MS, True), (3.0, True)):
        quiet = FakeQuiet()
        t = _timer(True, quiet, call_ms=call_ms)
        t.run(lambda: None)
        assert ("settle" in quiet.log) == settles, call_ms


def test_a_case_whose_settle_gives_up_is_timed_and_says_contended():
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=3.0)
    t.settle = lambda: (False, 1.0)  # another context's queue still running after the wait
    samples = t.run(lambda: None)
    assert samples and t.last_contended and t.last_phases["contended"] == 1.0
    t.settle = lambda: (True, 0.02)
    t.run(lambda: None)
    assert not t.last_contended


def test_the_wait_for_the_answer_is_measured():
    class SlowQuiet(FakeQuiet):
        def ask_quiet(self, host_bound=True):
            import time
            time.sleep(0.05)  # the supervisor freezing the other jobs
            return super().ask_quiet(host_bound)

    t = _timer(True, SlowQuiet())
    t.run(lambda: None)
    assert t.last_quiet_wait_s >= 0.05
    assert t.last_phases["quiet_wait"] == t.last_quiet_wait_s
    t = _timer(False, FakeQuiet())
    t.run(lambda: None)
    assert t.last_quiet_wait_s < 0.05  # not asked: nothing waited


def test_a_host_bound_run_measures_the_hosts_speed_before_its_batches():
    quiet = FakeQuiet()
    t = _timer(True, quiet)
    t.run(lambda: None)
    assert t.last_host_loop_ms is not None and t.last_host_loop_ms > 0
    assert t.last_phases["host_loop_ms"] == t.last_host_loop_ms
    t = _timer(False, FakeQuiet())
    t.run(lambda: None)
    assert t.last_host_loop_ms is None and "host_loop_ms" not in t.last_phases


def test_the_host_loop_is_the_fastest_of_its_tries():
    ticks = iter([0.0, 0.004, 1.0, 1.002, 2.0, 2.003])  # three tries: 4, 2 and 3 ms
    assert timer_module.host_loop_ms(n=10, tries=3, clock=lambda: next(ticks)) == pytest.approx(2.0)


def _unconverging_run(host_bound, clock_step_ms=20.0):
    """Runs a timer whose calls never converge (samples alternate 1 and 2 ms) on a fake clock
    that advances clock_step_ms per call; returns (timer, samples, ms spent in batches)."""
    quiet = FakeQuiet()
    t = _timer(host_bound, quiet)
    now = [0.0]

    def clock():
        return now[0] / 1e3

    def batches(fn, reps, before_each, after_each, hold=True):
        now[0] += clock_step_ms * reps
        return [1.0 + (k % 2) for k in range(reps)]

    t._batch = batches
    real = timer_module.time.perf_counter
    timer_module.time.perf_counter = clock
    try:
        t0 = now[0]
        samples = t.run(lambda: None)
    finally:
        timer_module.time.perf_counter = real
    return t, samples, now[0] - t0


def test_a_host_bound_call_that_does_not_converge_stops_at_the_smaller_budget():
    """Its batches freeze every other job, so they get HOST_BOUND_BUDGET_MS, not budget_ms."""
    assert timer_module.HOST_BOUND_BUDGET_MS < 500.0
    t, samples, spent = _unconverging_run(True)
    assert t.last_budget_ms == timer_module.HOST_BOUND_BUDGET_MS
    assert spent <= timer_module.HOST_BOUND_BUDGET_MS + 1e-6
    assert len(samples) >= timer_module.SLOW_MIN_REPS


def test_a_call_that_does_not_wait_on_the_host_keeps_the_whole_budget():
    t, samples, spent = _unconverging_run(False)
    assert t.last_budget_ms == 500.0
    assert timer_module.HOST_BOUND_BUDGET_MS < spent <= 500.0 + 1e-6


def test_a_kept_hush_ends_before_a_case_timed_without_one():
    """--quiet-timing host-bound: a host-bound case's kept hush is not carried into the next case,
    which only queues GPU work and is timed without one."""
    quiet = FakeQuiet()
    t = _timer(True, quiet, call_ms=3.0)
    t.keep_quiet = True
    t.run(lambda: None)
    t._estimate_ms = lambda fn: (3.0, False)
    t.run(lambda: None)
    assert quiet.log.count("ask") == 1 and quiet.log.count("end") == 1
    assert not t.last_quiet and not t.quiet_held



class _Stub:
    """Whatever the timer asks of it (an L2 guard, the scrub buffer, the marker): nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _FakeEvent:
    def __init__(self, enable_timing=False):
        self.enable_timing = enable_timing


def _real_batch_timer(monkeypatch, spins):
    """A CudaTimer whose _batch is the real one, on fake events and a spin that only counts."""
    monkeypatch.setattr(timer_module.torch.cuda, "Event", _FakeEvent)
    monkeypatch.setitem(timer_module._ORIGINALS, "torch.cuda.Event.record", lambda event: None)
    monkeypatch.setitem(timer_module._ORIGINALS, "torch.cuda.synchronize", lambda device=None: None)
    monkeypatch.setitem(timer_module._ORIGINALS, "torch.cuda.Event.elapsed_time", lambda a, b: 1.0)
    t = _timer(True, FakeQuiet())
    del t._batch  # the instance's fake: back to the class's own
    t.device, t.probe, t.l2, t.scrub, t.marker = None, timer_module.ProbeMarks(), _Stub(), _Stub(), _Stub()
    t.hold_ms, t.hold_factor = timer_module.FIRST_HOLD_MS, timer_module.HOLD_FACTOR
    t.last_batches = t.last_short_holds = 0
    t.keep_outputs = 0
    t._spin = spins.append
    return t


@pytest.mark.parametrize("host_bound", [True, False])
def test_only_a_call_that_can_be_queued_ahead_is_held_behind_a_spin(monkeypatch, host_bound):
    """A call that waits on the host inside would only wait for the spin to end, in the timing
    slot, at every batch (31 ms a batch for masked_select on the H100 of session 36)."""
    spins = []
    t = _real_batch_timer(monkeypatch, spins)
    t._estimate_ms = lambda fn: (1.0, host_bound)
    samples = t.run(lambda: None)
    batches = -(-len(samples) // t.batch)
    assert samples and len(spins) == (0 if host_bound else batches)
    assert (t.hold_ms == timer_module.FIRST_HOLD_MS) == host_bound
    assert t.last_phases.get("holds", 0.0) == pytest.approx(sum(spins) / 1e3)


@pytest.mark.parametrize("synchronises", [True, False])
def test_a_call_that_waited_for_its_hold_gets_none_for_the_rest_of_its_case(monkeypatch,
                                                                             synchronises):
    """A call that synchronises where torch's sync debug mode does not see it (cuSOLVER's and
    MAGMA's waits: det, lu, qr) cannot be queued ahead: its batch's first call waits on the host
    until the spin ends. Once two batches in a row show it, the case's later batches run unheld.
    On a clock that only the calls and the spin move: each call takes 1 ms to launch, and a
    synchronising one also waits for what is left of the spin."""
    now, pending, spins = [0.0], [0.0], []

    def spin(ms):
        spins.append(ms)
        pending[0] += ms

    def call():
        now[0] += 1e-3 + (pending[0] / 1e3 if synchronises else 0.0)
        pending[0] = 0.0

    t = _real_batch_timer(monkeypatch, spins)
    monkeypatch.setitem(timer_module._ORIGINALS, "time.perf_counter", lambda: now[0])
    t._spin = spin
    t._estimate_ms = lambda fn: (1.0, False)
    t.min_reps = 40  # four batches of ten
    samples = t.run(call)
    assert len(samples) == 40
    assert len(spins) == (2 if synchronises else 4)
    assert t.last_batches == 4


def test_one_batch_whose_first_call_paused_keeps_the_hold(monkeypatch):
    """A pause of the host in one batch's first call (a garbage collection, say) looks like a
    wait for the hold once; the hold stays, since a launch-bound call that queues behind it
    would otherwise be timed with its launch gaps."""
    now, spins, calls = [0.0], [], [0]

    def call():
        calls[0] += 1
        now[0] += 1e-3 + (0.05 if calls[0] == 11 else 0.0)  # the second batch's first call

    t = _real_batch_timer(monkeypatch, spins)
    monkeypatch.setitem(timer_module._ORIGINALS, "time.perf_counter", lambda: now[0])
    t._estimate_ms = lambda fn: (1.0, False)
    t.min_reps = 40
    t.run(call)
    assert len(spins) == 4


def test_only_a_first_call_about_a_hold_slower_than_the_rest_waited_for_it():
    waited = timer_module.waited_for_hold
    assert waited([6.0, 1.0, 1.0, 1.1], 5.0)        # 5 ms more than the others: the spin
    assert not waited([1.2, 1.0, 1.0, 1.1], 5.0)    # its own jitter
    assert not waited([1.0, 0.5, 0.5], 0.5)         # a hold too short to tell
    assert not waited([40.0], 20.0)                 # nothing to compare it with


def test_the_next_batchs_hold_is_the_hold_factor_times_this_ones_enqueue(monkeypatch):
    """KBX_TIMER_HOLD_FACTOR's experiment (the request's timer.hold_factor): on a clock that
    ticks 0.1 ms at each reading, the same batch sets the next hold in proportion to the factor."""
    holds = {}
    for factor in (2.0, 1.25):
        ticks = iter(range(10**6))
        monkeypatch.setitem(timer_module._ORIGINALS, "time.perf_counter",
                            lambda: next(ticks) * 1e-4)
        t = _real_batch_timer(monkeypatch, [])
        t.hold_factor = factor
        t._batch(lambda: None, 10)
        holds[factor] = t.hold_ms
    assert timer_module.MIN_HOLD_MS < holds[1.25] < holds[2.0] < timer_module.MAX_HOLD_MS
    assert holds[1.25] / holds[2.0] == pytest.approx(1.25 / 2.0)


@pytest.mark.parametrize("hold_ms, short", [(0.5, 1), (50.0, 0)])
def test_a_batch_that_took_longer_to_queue_than_its_hold_is_counted(monkeypatch, hold_ms, short):
    """The timing event's short_holds (a launch-bound call may then have waited for its own
    launches on the GPU: launch_gaps): 10 calls on a clock that ticks 0.1 ms at each reading take
    a few ms to queue, longer than a 0.5 ms hold and shorter than a 50 ms one."""
    ticks = iter(range(10**6))
    monkeypatch.setitem(timer_module._ORIGINALS, "time.perf_counter", lambda: next(ticks) * 1e-4)
    t = _real_batch_timer(monkeypatch, [])
    t.hold_ms = hold_ms
    t._batch(lambda: None, 10)
    assert (t.last_batches, t.last_short_holds) == (1, short)
    t._batch(lambda: None, 10, hold=False)  # no hold at all: every batch outlasts it
    assert (t.last_batches, t.last_short_holds) == (2, short + 1)


def _outputs_alive_at_each_call(monkeypatch, keep_outputs, make_output):
    """How many earlier calls' outputs were still alive at each timed call of one run (weak
    references to every output the calls returned)."""
    import weakref
    t = _real_batch_timer(monkeypatch, [])
    t._estimate_ms = lambda fn: (1.0, False)
    t.keep_outputs = keep_outputs
    t.min_reps = 20  # two batches of ten
    refs, alive = [], []

    def call():
        alive.append(sum(r() is not None for r in refs))
        out = make_output()
        refs.append(weakref.ref(out[0] if isinstance(out, tuple) else out))  # a tuple's: its own
        return out

    assert len(t.run(call)) == 20
    return alive


def test_kept_outputs_rotate_through_a_ring_and_end_with_their_batch(monkeypatch):
    """KBX_TIMER_KEEP_OUTPUTS=2: call i of a batch runs beside the outputs of the i % 3 calls
    before it, so that the allocator hands consecutive calls three different blocks; none
    outlives its batch. Off (0), every output is freed before the next call."""
    ring = _outputs_alive_at_each_call(monkeypatch, 2, lambda: timer_module.torch.empty(8))
    assert ring == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0] * 2
    off = _outputs_alive_at_each_call(monkeypatch, 0, lambda: timer_module.torch.empty(8))
    assert off == [0] * 20


def test_outputs_too_large_or_not_tensors_are_not_kept(monkeypatch):
    """The ring never holds more than KEEP_OUTPUTS_MAX_BYTES in all, nor what it cannot size."""
    monkeypatch.setattr(timer_module, "KEEP_OUTPUTS_MAX_BYTES", 2 * 8 * 4 - 1)  # < 2 outputs
    big = _outputs_alive_at_each_call(monkeypatch, 2, lambda: timer_module.torch.empty(8))
    assert big == [0] * 20
    monkeypatch.setattr(timer_module, "KEEP_OUTPUTS_MAX_BYTES", 1 << 30)

    class Opaque:
        pass

    assert _outputs_alive_at_each_call(monkeypatch, 2, Opaque) == [0] * 20
    pair = _outputs_alive_at_each_call(
        monkeypatch, 1, lambda: (timer_module.torch.empty(4), timer_module.torch.empty(4)))
    assert pair == [0, 1] * 10


def test_output_bytes_sizes_tensors_and_small_collections_of_them():
    torch = timer_module.torch
    assert timer_module.output_bytes(torch.empty(10, dtype=torch.float32)) == 40
    assert timer_module.output_bytes((torch.empty(2), None, torch.empty(3))) == 20
    assert timer_module.output_bytes({"a": torch.empty(1)}) == 4
    assert timer_module.output_bytes([torch.empty(1)] * 17) is None  # more than it walks
    assert timer_module.output_bytes((torch.empty(1), 3)) is None
    assert timer_module.output_bytes(None) is None

    class Sneaky(torch.Tensor):  # its methods would be the candidate's code in the timer's work
        pass

    assert timer_module.output_bytes(torch.empty(2).as_subclass(Sneaky)) is None
    assert timer_module.output_bytes((torch.empty(2).as_subclass(Sneaky),)) is None

    class Listish(list):
        pass

    assert timer_module.output_bytes(Listish([torch.empty(1)])) is None
