"""Compares the timings of two kbx result databases (or two runs in one): repeatability of
speedups between runs, and the probe's overhead (event-timed medians with and without it).

    python bench/compare_runs.py A.db B.db [--field cand_ms|cand_event_ms|eager_ms]
    python bench/compare_runs.py A.db B.db --probe-overhead   (A: KBX_PROBE_LIB=off, B: probe on)

Prints per task |log(s_A/s_B)| of speedups and per case |log(t_A/t_B)| of the chosen median,
then their median and maximum in percent.
"""

import argparse
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
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--field", default="cand_ms")
    ap.add_argument("--probe-overhead", action="store_true",
                    help="compare A's cand_ms (events, no probe) with B's cand_event_ms")
    args = ap.parse_args()
    if args.probe_overhead:
        a = case_medians(args.a, "cand_ms")
        b = case_medians(args.b, "cand_event_ms")
        devs = [(f"{k[0]}:{k[1]}", 100 * abs(math.log(b[k] / a[k]))) for k in a if k in b and a[k] > 0 and b[k] > 0]
        _summary("probe overhead on event-timed kernel medians", devs)
        return
    sa, sb = speedups(args.a), speedups(args.b)
    devs = [(t, 100 * abs(math.log(sa[t] / sb[t]))) for t in sorted(sa) if t in sb]
    for t, d in devs:
        print(f"{t}: {sa[t]:.3f}x vs {sb[t]:.3f}x ({d:.2f}%)")
    _summary("speedup |log ratio|", devs)
    a, b = case_medians(args.a, args.field), case_medians(args.b, args.field)
    cdevs = [(f"{k[0]}:{k[1]}", 100 * abs(math.log(b[k] / a[k]))) for k in a if k in b and a[k] > 0 and b[k] > 0]
    _summary(f"case {args.field} |log ratio|", cdevs)


if __name__ == "__main__":
    main()
