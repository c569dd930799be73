"""The timer's stopping rule: repetitions stop once the median's 95% interval is tight."""

from kbx_worker.timer import converged, median_interval


def test_median_interval_matches_the_order_statistics():
    assert median_interval(list(range(100, 0, -1))) == (40, 61)  # same as the C++ test
    assert median_interval([1, 2, 3, 4, 5]) is None


def test_converged_needs_a_tight_interval():
    assert converged([100.0 + 0.1 * (i % 7) for i in range(30)])
    assert not converged([100.0 + 10.0 * (i % 7) for i in range(30)])
    assert not converged([100.0] * 5)  # too few samples to say
    tight_with_outliers = [100.0] * 40 + [1000.0] * 3
    assert converged(tight_with_outliers)
