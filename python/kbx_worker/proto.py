"""The worker's side of the pipe protocol with the supervisor.

The supervisor passes two file descriptors: one carrying the JSON request, one for events (one
JSON object per line). Both are moved to high descriptor numbers and marked close-on-exec, so that
candidates printing to stdout/stderr or spawning processes never touch them.
"""

import json
import math
import os


def _to_json(obj):
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(obj), separators=(",", ":"))


class Channel:
    """Request in, events out, over the supervisor's pipes."""

    def __init__(self, request_fd, event_fd):
        hidden_in = os.dup2(request_fd, 1000 + request_fd) if request_fd < 1000 else request_fd
        hidden_out = os.dup2(event_fd, 1000 + event_fd) if event_fd < 1000 else event_fd
        for fd in (request_fd, event_fd):
            if fd not in (hidden_in, hidden_out):
                os.close(fd)
        os.set_inheritable(hidden_in, False)
        os.set_inheritable(hidden_out, False)
        self._in = os.fdopen(hidden_in, "r", encoding="utf-8")
        self._out = os.fdopen(hidden_out, "w", encoding="utf-8", buffering=1)
        self.quiet_kept = False  # the last ask_quiet's answer was "still"

    def read_request(self):
        # One line: with a GPU timing slot the pipe stays open for the slot's "go" (wait_for_slot).
        return json.loads(self._in.readline())

    def wait_for_slot(self):
        """Asks the supervisor for the GPU's timing slot and waits until it is this job's: only
        then may full-size cases and timed loops run (no other job's heavy GPU work overlaps).
        Exits when the supervisor closes the pipe instead."""
        self.send("slot_wanted")
        if self._in.readline().strip() != "go":
            raise SystemExit(3)

    def more_jobs(self):
        """Asks the supervisor for more jobs of the same kind (a reference worker kept across its
        lane's chunks): the list it sends on the request pipe, or None when it says "end" or
        closes the pipe."""
        self.send("more_wanted")
        line = self._in.readline().strip()
        if not line or line == "end":
            return None
        return json.loads(line)["jobs"]

    def ask_quiet(self, host_bound=True):
        """Asks the supervisor, while this job holds the GPU's timing slot, to freeze every other
        job on the host (a call is about to be timed). host_bound: the call waits on the host
        inside, so kbx's own CPU work (its comparisons of outputs) pauses as well; a call that
        only queues GPU work leaves it running. True when it did ("quiet", or "still": this job's
        hush went on from its last ask, nothing thawed in between; quiet_kept says which), False
        when it refused ("loud") or closed the pipe."""
        self.send("quiet_wanted", host_bound=bool(host_bound))
        answer = self._in.readline().strip()
        self.quiet_kept = answer == "still"
        return answer in ("quiet", "still")

    def end_quiet(self):
        self.send("quiet_done")

    def send(self, ev, **fields):
        fields["ev"] = ev
        self._out.write(_to_json(fields) + "\n")
        self._out.flush()
