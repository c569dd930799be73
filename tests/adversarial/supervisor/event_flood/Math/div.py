# Attack: write protocol events without end on every pipe it holds (the worker's event pipe is
# one of them): kbx kept every event it read, in its own memory, until the job's time limit
# (minutes of a fast writer: the supervisor ran out of memory and the whole run died).
# Expected: crash (protocol error: more events than a job writes), within seconds, and every
# other job of the run unharmed.
import os
import stat

import triton


@triton.jit
def _unused(x_ptr):
    pass


def _pipes():
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                found.append(fd)
        except (ValueError, OSError):
            pass
    return found


def div(input, other, rounding_mode=None, out=None):
    line = b'{"ev":"log","text":"x"}\n' * 4096
    pipes = _pipes()
    while pipes:
        for fd in list(pipes):
            try:
                os.write(fd, line)
            except OSError:
                pipes.remove(fd)  # the read end (request pipe) or one closed by kbx
    raise RuntimeError("every pipe closed")
