"""How far a reference's eager timing and the same code timed as its candidate lie apart, by the
kind of call: host-bound (timing flag host_bound), waiting on the host inside (waits_on_host) and
the others; and, given the run's profile log (KBX_DEBUG_TIMING), whether the host's speed at the
two timings (host_loop_ms, a fixed Python loop timed before a host-waiting call's batches)
explains the gap.

  python3 bench/host_bound_apart.py RUN.db [--log profile.log.gz] [--run N]

RUN.db: a database of the references judged as their own candidates (bench/refs184.sh's, or
bench/results/2026-12-05-h100-s37/call.sh's warm.db / eager.db). The log pairs each waiting case's
eager host_loop_ms (the reference's line) with its candidate's (the job's timeline); it holds one
run, so --run names that run (default: the database's last, the run a warm call adds to the
database it was given).
"""

import argparse
import gzip
import math
import re
import sqlite3
import statistics

KINDS = (("host_bound", lambda f: "host_bound" in f),
         ("waits_on_host", lambda f: "waits_on_host" in f),
         ("other", lambda f: "host_bound" not in f and "waits_on_host" not in f))


def _cases(con):
    return con.execute(
        "SELECT r.run_id, r.task, c.name, c.cand_ms, c.eager_ms, coalesce(c.timing_flags, '') "
        "FROM case_results c JOIN results r ON r.id = c.result_id "
        "WHERE c.cand_ms > 0 AND c.eager_ms > 0").fetchall()


def _apart_line(logs):
    logs = sorted(logs)
    over = sum(1 for x in logs if x > math.log(1.08))
    return (f"n={len(logs):4} |log| median {statistics.median(logs) * 100:.2f}% "
            f"p90 {logs[int(len(logs) * 0.9)] * 100:.2f}% max {logs[-1] * 100:.1f}% "
            f"over 8%: {over}")


def _host_loops(path):
    """(eager, candidate) host_loop_ms by (task, case) from a profile log."""
    eager, cand = {}, {}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            m = re.match(r"kbx: reference (\S+) (\S+) \(full\):.*eager_host_loop_ms=([0-9.]+)",
                         line)
            if m:
                eager[m.group(1), m.group(2)] = float(m.group(3))
            m = re.match(r"kbx: (\S+): timeline: (.*)", line)
            if m:
                for seg in m.group(2).split(" | "):
                    t = re.match(r"\s*[0-9.]+ timing (\S+) .*host_loop_ms=([0-9.]+)", seg)
                    if t:
                        cand[m.group(1), t.group(1)] = float(t.group(2))
    return eager, cand


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("db")
    p.add_argument("--log")
    p.add_argument("--run", type=int)
    a = p.parse_args()
    rows = _cases(sqlite3.connect(a.db))
    runs = sorted({r[0] for r in rows})
    for run in runs:
        for name, pred in KINDS:
            logs = [abs(math.log(e / c)) for r, _, _, c, e, f in rows if r == run and pred(f)]
            if logs:
                print(f"run {run} {name:14} {_apart_line(logs)}")
    if not a.log or not runs:
        return
    run = a.run if a.run is not None else runs[-1]
    eager, cand = _host_loops(a.log)
    pairs = [(math.log(c / e), math.log(cand[t, n] / eager[t, n]))
             for r, t, n, c, e, _ in rows
             if r == run and (t, n) in eager and (t, n) in cand]
    if len(pairs) < 3:
        print(f"run {run}: {len(pairs)} waiting cases with both host_loop_ms in the log")
        return
    xs, ys = [q[1] for q in pairs], [q[0] for q in pairs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    vx = sum((x - mx) ** 2 for x in xs)
    vy = sum((y - my) ** 2 for y in ys)
    all_loops = sorted(list(eager.values()) + list(cand.values()))
    print(f"run {run}: host_loop_ms over {len(all_loops)} timings: min {all_loops[0]:.3f}, "
          f"median {statistics.median(all_loops):.3f}, max {all_loops[-1]:.3f}")
    print(f"run {run}: {len(pairs)} waiting cases; correlation of log(candidate/eager time) with "
          f"log(candidate/eager host_loop_ms) {cov / math.sqrt(vx * vy):.2f}")
    for label, keep in (("host_loop_ms apart by more than 20%", lambda x: abs(x) > math.log(1.2)),
                        ("host_loop_ms within 20%", lambda x: abs(x) <= math.log(1.2))):
        logs = [abs(t) for t, h in pairs if keep(h)]
        if logs:
            print(f"  {label:36} {_apart_line(logs)}")


if __name__ == "__main__":
    main()
