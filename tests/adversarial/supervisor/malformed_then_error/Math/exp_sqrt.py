# Attack: a line that is no event on every pipe it holds (the worker's event pipe is one), then
# an exception at import, which the worker reports as an error event after it. Until session 18
# kbx read on past the broken line, and the later error decided the status (import_error, a
# status the attacker chose); on the H200 deep_event ended so because a write to one of the CUDA
# driver's pipes made its import fail. Expected: crash (protocol error: malformed event), the
# worker ended at that line, every other job unharmed.
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


for _name in _os.listdir("/proc/self/fd"):
    try:
        _fd = int(_name)
        if _fd > 2 and _stat.S_ISFIFO(_os.fstat(_fd).st_mode):
            _write_all(_fd, b"this line is no event\n")
    except (ValueError, OSError):
        pass
_time.sleep(0.5)  # kbx has read the broken line before the error event follows it
raise ImportError("chosen by the attacker")

# append: solutions/expert/Math/exp_sqrt.py
