# Attack: one protocol event nested a million levels deep, written on every pipe it holds (the
# worker's event pipe is one of them) when the module is imported; its kernel is the expert's,
# so that nothing else fails. nlohmann::json parses and frees any depth but copies a value by
# recursion: kbx died of a stack overflow (SIGSEGV) copying the event, the whole run with it.
# Expected: crash (protocol error: nested deeper than 256 levels), every other job unharmed.
# It gives up on a pipe that stays full for 2 s (one nobody drains: it must not hang itself).
import fcntl as _fcntl
import os as _os
import stat as _stat
import time as _time


def _write_all(fd, data, patience_s=2.0):
    flags = _fcntl.fcntl(fd, _fcntl.F_GETFL)
    _fcntl.fcntl(fd, _fcntl.F_SETFL, flags | _os.O_NONBLOCK)
    view, last = memoryview(data), _time.monotonic()
    while view and _time.monotonic() - last < patience_s:
        try:
            view = view[_os.write(fd, view):]
            last = _time.monotonic()
        except BlockingIOError:
            _time.sleep(0.001)
    _fcntl.fcntl(fd, _fcntl.F_SETFL, flags)


def _write_deep_event():
    depth = 1_000_000
    line = ('{"ev":"case","case":"x","deep":' + "[" * depth + "]" * depth + "}\n").encode()
    for name in _os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if fd > 2 and _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                _write_all(fd, line)
        except (ValueError, OSError):
            pass


_write_deep_event()

# The expert's kernel follows when the test places this candidate (tests/python/test_supervisor.py,
# _place: a line "# append: PATH" adds that file of the repository):
# append: solutions/expert/Math/floor.py
