# Attack: write protocol events without end on every pipe it holds (the worker's event pipe is
# one of them): kbx kept every event it read, in its own memory, until the job's time limit
# (minutes of a fast writer: the supervisor ran out of memory and the whole run died).
# Expected: crash (protocol error: more events than a job writes), within seconds, and every
# other job of the run unharmed. Its writes do not block: on a GPU the process also holds the
# CUDA driver's own pipes, which nobody drains, and a blocking write there hung the attacker
# itself until its time limit (session 17 on the H200), never reaching kbx's limit.
import fcntl
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
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
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
            except BlockingIOError:
                pass  # full: the next round
            except OSError:
                pipes.remove(fd)  # the read end (request pipe) or one closed by kbx
    raise RuntimeError("every pipe closed")
