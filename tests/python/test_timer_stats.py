"""The timer's stopping rule: repetitions stop once the median's 95% interval is tight."""

from kbx_worker.timer import (SLOW_MIN_REPS, another_batch_fits, converged, median_interval,
                              reps_for)


def test_median_interval_matches_the_order_statistics():
    assert median_interval(list(range(100, 0, -1))) == (40, 61)  # same as the C++ test
    assert median_interval([1, 2, 3, 4, 5]) is None


def test_converged_needs_a_tight_interval():
    assert converged([100.0 + 0.1 * (i % 7) for i in range(30)])
    assert not converged([100.0 + 10.0 * (i % 7) for i in range(30)])
    assert not converged([100.0] * 5)  # too few samples to say
    tight_with_outliers = [100.0] * 40 + [1000.0] * 3
    assert converged(tight_with_outliers)


def test_slow_calls_get_fewer_reps_but_enough_for_the_interval_and_the_variants():
    # fast: the configured 10 calls in batches of 10
    assert reps_for(0.05, 10, 10, 500.0) == (10, 10)
    assert reps_for(50.0, 10, 10, 500.0) == (10, 10)  # 10 calls fill the budget exactly
    # a 300 ms call: 10 calls would take 3 s against a 0.5 s budget
    assert reps_for(300.0, 10, 10, 500.0) == (SLOW_MIN_REPS, SLOW_MIN_REPS)
    assert reps_for(80.0, 10, 10, 500.0) == (7, 7)
    assert SLOW_MIN_REPS >= 6  # median_interval needs 6; a candidate's case has 4 variants
    assert median_interval([1.0] * SLOW_MIN_REPS) is not None
    assert reps_for(0.0, 10, 10, 500.0) == (10, 10)  # no estimate: as configured


def test_a_batch_that_would_overrun_the_budget_is_not_started():
    # ten 48 ms calls ended just under the 500 ms budget: ten more would end near 960 ms
    assert not another_batch_fits(480.0, 10, 10, 500.0)
    # fast calls far from the budget go on
    assert another_batch_fits(20.0, 10, 10, 500.0)
    assert another_batch_fits(250.0, 10, 10, 500.0)  # ends at 500 ms exactly
    assert not another_batch_fits(251.0, 10, 10, 500.0)
    assert not another_batch_fits(600.0, 0, 10, 500.0)  # nothing timed and the budget spent


def test_a_burst_with_another_contexts_time_slice_is_contended():
    from kbx_worker.timer import burst_contended
    alone = [0.081, 0.080, 0.082, 0.080, 0.081, 0.080, 0.083, 0.080]
    assert not burst_contended(alone)
    # the first scrub waited out another context's 2 ms time slice (session 15, H200)
    assert burst_contended([2.3] + alone[1:])
    assert not burst_contended([0.16] + alone[1:])  # 2x and 80 us: a slow first, not a slice


def _settle(bursts, t=None):
    """Runs CudaTimer.settle on given bursts, with a clock that a pause moves on."""
    from kbx_worker import timer
    now = [0.0]
    seen = []

    def burst():
        seen.append(1)
        return bursts[min(len(seen), len(bursts)) - 1]

    def sleep(s):
        now[0] += s

    t = t or object.__new__(timer.CudaTimer)  # no GPU needed: the burst is given
    settled, waited = t.settle(burst=burst, sleep=sleep, clock=lambda: now[0])
    return settled, waited, len(seen)


def test_the_timer_waits_for_another_contexts_work_to_drain_before_timing():
    from kbx_worker.timer import SETTLE_PAUSE_S
    clean, busy = [0.08] * 8, [2.4] + [0.08] * 7
    assert _settle([clean]) == (True, 0.0, 1)
    settled, waited, bursts = _settle([busy, busy, busy, clean])
    assert settled and bursts == 4 and abs(waited - 3 * SETTLE_PAUSE_S) < 1e-9


def test_the_timer_gives_up_on_work_that_never_drains_and_says_so():
    from kbx_worker.timer import SETTLE_MAX_S
    from kbx_worker import timer
    t = object.__new__(timer.CudaTimer)
    busy = [[2.4] + [0.08] * 7]
    settled, waited, bursts = _settle(busy, t)
    assert not settled and waited >= SETTLE_MAX_S and bursts > 10
    # a steady load: the worker's later cases look once and do not wait again
    assert _settle(busy, t) == (False, 0.0, 1)
    assert _settle([[0.08] * 8], t) == (True, 0.0, 1)
