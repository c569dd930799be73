"""The timer's check of whether a call waits on the host (timer._calls_synchronising), with a
stand-in for torch's sync debug mode: a 'synchronizing' step warns as c10 does while the mode is
'warn'."""

import warnings

from kbx_worker.timer import SYNC_WARNING, _calls_synchronising


class FakeSyncMode:
    def __init__(self, mode=0):
        self.mode = mode
        self.warned = 0
        self.set_calls = []

    def get(self):
        return self.mode

    def set(self, mode):
        self.set_calls.append(mode)
        self.mode = mode

    def sync(self):
        """One wait on the host, as torch reports it in the mode 'warn'."""
        if self.mode == "warn":
            self.warned += 1
            warnings.warn(SYNC_WARNING, UserWarning)


def test_a_call_that_waits_is_seen_and_the_mode_goes_off_at_its_first_wait():
    fake = FakeSyncMode()

    def call():
        for _ in range(1000):
            fake.sync()

    assert _calls_synchronising(call, fake.get, fake.set)
    assert fake.warned == 1  # the other 999 waits ran without a warning
    assert fake.mode == 0  # the mode the caller had


def test_a_call_that_never_waits_is_not_host_bound():
    fake = FakeSyncMode()
    assert not _calls_synchronising(lambda: sum(range(100)), fake.get, fake.set)
    assert fake.mode == 0 and fake.set_calls == ["warn", 0]


def test_an_unrelated_warning_is_not_a_wait_and_leaves_the_mode_on():
    fake = FakeSyncMode()
    seen_mode = []

    def call():
        warnings.warn("some deprecation", DeprecationWarning)
        seen_mode.append(fake.mode)

    assert not _calls_synchronising(call, fake.get, fake.set)
    assert seen_mode == ["warn"]


def test_the_callers_warning_filters_and_display_come_back():
    fake = FakeSyncMode(mode=1)
    before_show = warnings.showwarning
    before_filters = list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a candidate's filter must not turn the wait into a raise
        assert _calls_synchronising(fake.sync, fake.get, fake.set)
    assert warnings.showwarning is before_show
    assert list(warnings.filters) == before_filters
    assert fake.mode == 1


def test_a_call_that_raises_still_restores_the_mode():
    fake = FakeSyncMode(mode=0)

    def call():
        fake.sync()
        raise RuntimeError("candidate failed")

    try:
        _calls_synchronising(call, fake.get, fake.set)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the call's exception must reach the caller")
    assert fake.mode == 0
