"""Compares the timings of two kbx result databases (or two runs in one): repeatability of
speedups between runs, and the probe's overhead (event-timed medians with and without it).

    python bench/compare_runs.py A.db B.db [A2.db B2.db ...]
        [--field cand_ms|cand_event_ms|eager_ms]
    python bench/compare_runs.py A.db B.db --probe-overhead   (A: KBX_PROBE_LIB=off, B: probe on)

Prints per task |log(s_A/s_B)| of speedups and per case |log(t_A/t_B)| of the chosen median,
then their median and maximum in percent. Several pairs (each half of the categories run twice,
say) are compared as one set. The speedups are also summarised apart for the tasks whose speedup
follows the host's speed, as `kbx results` marks them `~`: a timed case that waits on the host
inside (timing_flags waits_on_host or eager_waits_on_host, since session 34: a sync) or whose
calls waited for their own launches (launch_gaps, eager_launch_gaps, since session 37), and for
the rest. Each run's host is printed where its environment records it (CPU model, CPUs, and the
pure-Python speed as the run started: since session 46).
"""

import argparse
import json
import math
import sqlite3
import statistics


def _latest_run(db):
    return db.execute("SELECT MAX(id) FROM runs").fetchone()[0]


def speedups(path):
    db = sqlite3.connect(path)
    run = _latest_run(db)
    return {t: s for t, s in db.execute(
        "SELECT task, speedup FROM results WHERE run_id=? AND speedup IS NOT NULL", (run,))}


def case_medians(path, field):
    db = sqlite3.connect(path)
    run = _latest_run(db)
    sql = (f"SELECT r.task, c.name, c.{field} FROM case_results c JOIN results r "
           f"ON r.id=c.result_id WHERE r.run_id=? AND c.{field} IS NOT NULL")
    return {(t, n): v for t, n, v in db.execute(sql, (run,))}


def host_following_tasks(path):
    """Tasks of the latest run with a timed case flagged waits_on_host or launch_gaps (the
    candidate's side or the eager baseline's): report::follows_host's flags."""
    db = sqlite3.connect(path)
    run = _latest_run(db)
    sql = ("SELECT DISTINCT r.task FROM case_results c JOIN results r ON r.id=c.result_id "
           "WHERE r.run_id=? AND (c.timing_flags LIKE '%waits_on_host%' "
           "OR c.timing_flags LIKE '%launch_gaps%')")
    return {t for (t,) in db.execute(sql, (run,))}


def host_of(path):
    """(cpu, cpus, host_loop_ms) of the latest run's environment (the first reference worker's
    hello, since session 46); Nones for an older run or a database without the column."""
    db = sqlite3.connect(path)
    try:
        row = db.execute("SELECT environment FROM runs WHERE id=?", (_latest_run(db),)).fetchone()
    except sqlite3.OperationalError:
        return None, None, None
    try:
        env = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        env = {}
    return env.get("cpu"), env.get("cpus"), env.get("host_loop_ms")


def host_line(path):
    """The run's host as its environment records it, or None. Its host_loop_ms is taken as the
    run starts, amid its other workers' starts: one H100 machine gave 0.399 and 0.228 ms in two
    runs back to back (session 46), while quiet measurements of two hosts were 0.209 and 0.451 ms
    apart: a figure to read beside the run's quiet ones, not a test of the host."""
    cpu, cpus, loop_ms = host_of(path)
    if cpu is None and loop_ms is None:
        return None
    loop = f", host_loop_ms at start {loop_ms:.3f}" if loop_ms else ""
    return f"host of {path}: {cpu}, {cpus} CPUs{loop}"


def _case_devs(a, b):
    """[(task:case, |log(b/a)| in %)] over the cases both medians have."""
    return [(f"{k[0]}:{k[1]}", 100 * abs(math.log(b[k] / a[k])))
            for k in a if k in b and a[k] > 0 and b[k] > 0]


def _summary(label, devs):
    if not devs:
        print(f"{label}: nothing to compare")
        return
    vals = [d for _, d in devs]
    worst = max(devs, key=lambda x: x[1])
    print(f"{label}: median {statistics.median(vals):.2f}%, max {max(vals):.2f}% ({worst[0]}), "
          f"n={len(vals)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dbs", nargs="+", metavar="DB", help="pairs of databases: A B [A2 B2 ...]")
    ap.add_argument("--field", default="cand_ms")
    ap.add_argument("--probe-overhead", action="store_true",
                    help="compare A's cand_ms (events, no probe) with B's cand_event_ms")
    args = ap.parse_args()
    if len(args.dbs) % 2:
        ap.error(f"{len(args.dbs)} databases given: they go in pairs (A B [A2 B2 ...])")
    pairs = list(zip(args.dbs[0::2], args.dbs[1::2]))
    if args.probe_overhead:
        devs = []
        for pa, pb in pairs:
            devs += _case_devs(case_medians(pa, "cand_ms"), case_medians(pb, "cand_event_ms"))
        _summary("probe overhead on event-timed kernel medians", devs)
        return
    devs, cdevs, waiting = [], [], set()
    for pa, pb in pairs:
        sa, sb = speedups(pa), speedups(pb)
        pair_devs = [(t, 100 * abs(math.log(sa[t] / sb[t]))) for t in sorted(sa) if t in sb]
        for t, d in pair_devs:
            print(f"{t}: {sa[t]:.3f}x vs {sb[t]:.3f}x ({d:.2f}%)")
        devs += pair_devs
        for line in filter(None, (host_line(pa), host_line(pb))):
            print(line)
        waiting |= host_following_tasks(pa) | host_following_tasks(pb)
        cdevs += _case_devs(case_medians(pa, args.field), case_medians(pb, args.field))
    _summary("speedup |log ratio|", devs)
    _summary("  tasks whose speedup follows the host (~)",
             [d for d in devs if d[0] in waiting])
    _summary("  the other tasks", [d for d in devs if d[0] not in waiting])
    _summary(f"case {args.field} |log ratio|", cdevs)


if __name__ == "__main__":
    main()
