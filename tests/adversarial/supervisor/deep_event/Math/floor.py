# Attack: one protocol event nested a million levels deep, written on every pipe it holds (the
# worker's event pipe is one of them) when the module is imported; its kernel is the expert's,
# so that nothing else fails. nlohmann::json parses and frees any depth but copies a value by
# recursion: kbx died of a stack overflow (SIGSEGV) copying the event, the whole run with it.
# Expected: crash (protocol error: nested deeper than 256 levels), every other job unharmed.
import os as _os
import stat as _stat


def _write_deep_event():
    depth = 1_000_000
    line = ('{"ev":"case","case":"x","deep":' + "[" * depth + "]" * depth + "}\n").encode()
    for name in _os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if fd > 2 and _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                _os.write(fd, line)
        except (ValueError, OSError):
            pass


_write_deep_event()

# The expert's kernel follows when the test places this candidate (tests/python/test_supervisor.py,
# _place: a line "# append: PATH" adds that file of the repository):
# append: solutions/expert/Math/floor.py
