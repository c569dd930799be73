# Attack: close every pipe kbx reads (stdout, stderr, the event pipe) and the request pipe, then
# hang: with nothing left to read, kbx once waited for the process's end instead of its time
# limit, so the job ran as long as the candidate liked and held its lane. Expected: timeout, at
# the job's limit, confined (the namespace's waiter outside still holds the pipes) and unconfined
# (kbx keeps the clock while it waits for the process).
import os
import time

import triton


@triton.jit
def _unused(x_ptr):
    pass


def sub(input, other, *, alpha=1, out=None):
    for fd in (1, 2, 3, 4, 5):
        try:
            os.close(fd)
        except OSError:
            pass
    time.sleep(3600)
