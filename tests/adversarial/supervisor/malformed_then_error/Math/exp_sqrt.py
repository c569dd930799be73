# Attack: a line that is no event on every pipe it holds (the worker's event pipe is one), then
# an exception at import, which the worker reports as an error event after it. Until session 18
# kbx read on past the broken line, and the later error decided the status (import_error, a
# status the attacker chose); on the H200 deep_event ended so because a write to one of the CUDA
# driver's pipes made its import fail. Expected: crash (protocol error: malformed event), the
# worker ended at that line, every other job unharmed.
import os as _os
import stat as _stat
import time as _time

# One short line per pipe, written without blocking: a pipe with room takes it whole (the CUDA
# driver's pipes, which nobody drains, included); a full one is skipped.
for _name in _os.listdir("/proc/self/fd"):
    try:
        _fd = int(_name)
        if _fd > 2 and _stat.S_ISFIFO(_os.fstat(_fd).st_mode):
            _os.set_blocking(_fd, False)
            _os.write(_fd, b"this line is no event\n")
    except (ValueError, OSError):
        pass
_time.sleep(0.5)  # kbx has read the broken line before the error event follows it
raise ImportError("chosen by the attacker")

# append: solutions/expert/Math/exp_sqrt.py
