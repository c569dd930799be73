"""Checks a bench/timing_hardening_gpu.sh database's results (CSV and JSON of `kbx results`):
prints one row per candidate (status got, expected, speedup) and exits 1 on any mismatch.

    python3 bench/timing_hardening_check.py results.csv results.json

Rules: every expert passes, at or below 105% of its roofline (best case: half the floor's 10%
margin, kFloorMargin; one calibration's GEMM peaks vary by about 5% with the GPU's clocks, so a
near-peak GEMM expert reads 95-107% of them: 94.9%, 100.5% and 106.7% on the H200), with a median
harness overhead of at most 1.5 s; every attack of tests/adversarial/timing/ gets one of its
expected statuses (bench/make_timing_exploits.py ADVERSARIAL), and one that passes is at most
10% faster than the expert on its task; every planted exploit gets its EXPECTED status; no
timed case of any expert is flagged impossible_speed or cached, and the run had a calibration."""

import csv
import json
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_timing_exploits as m  # noqa: E402


def main(csv_path, json_path):
    rows = list(csv.DictReader(open(csv_path)))
    doc = json.load(open(json_path))
    by = {(r["method"], r["task"]): r for r in rows}
    bad = []

    def check(ok, what):
        if not ok:
            bad.append(what)
        return "ok" if ok else "MISMATCH"

    print(f"{'candidate':<44} {'got':<18} {'expected':<40} {'speedup':>8} {'roofline':>9}  verdict")
    experts = [r for r in rows if r["method"] == "expert"]
    most = 1.05
    for r in experts:
        frac = float(r["best_roofline_fraction"]) if r["best_roofline_fraction"] else None
        ok = r["status"] == "passed" and frac is not None and frac <= most
        print(f"{'expert ' + r['task']:<44} {r['status']:<18} {f'passed, roofline <= {most:.0%}':<40} "
              f"{r['speedup'] or '-':>8} {f'{100 * frac:.1f}%' if frac else '-':>9}  "
              f"{check(ok, 'expert ' + r['task'])}")
    if not experts:
        bad.append("no expert results")
    overheads = [float(r["overhead_s"]) for r in experts]
    if overheads:
        med = statistics.median(overheads)
        print(f"expert overhead per candidate: median {med:.2f} s, max {max(overheads):.2f} s "
              f"-> {check(med <= 1.5, 'overhead median above 1.5 s')}")
    for attack, (task, _, _, expected, _) in m.ADVERSARIAL.items():
        r = by.get((attack, task))
        got = r["status"] if r else "(no result)"
        ok = got in expected.split("|")
        if "passed_untimed" in expected.split("|") and got == "passed":
            ok = not (r or {}).get("speedup")  # right values, no time: its timing was cut
        elif ok and got == "passed":
            ref = by.get(("expert", task))
            ok = bool(ref and ref["speedup"] and r["speedup"]
                      and float(r["speedup"]) <= 1.10 * float(ref["speedup"]))
            expected += " (speedup <= 1.10x expert's)"
        print(f"{attack + ' ' + task:<44} {got:<18} {expected:<40} {(r or {}).get('speedup') or '-':>8}"
              f" {'':>9}  {check(ok, attack)}")
    for task, expected in m.EXPECTED.items():
        r = by.get(("exploits", task))
        got = r["status"] if r else "(no result)"
        print(f"{'planted ' + task:<44} {got:<18} {expected:<40} {'':>8} {'':>9}  "
              f"{check(got == expected, 'planted ' + task)}")
    calibrated = [run for run in doc.get("runs", []) if run.get("calibration")]
    print(f"runs with a calibration: {len(calibrated)} of {len(doc.get('runs', []))} "
          f"-> {check(len(calibrated) == len(doc.get('runs', [])) and calibrated, 'no calibration')}")
    for res in doc.get("results", []):
        if res.get("method") != "expert":
            continue
        for c in res.get("cases", []):
            flags = c.get("timing_flags", "") or ""
            if "below_roofline" in flags or "cached_per_values" in flags:
                check(False, f"expert {res['task']} case {c['name']}: {flags}")
                print(f"expert {res['task']} case {c['name']} flagged {flags}: MISMATCH")
    print("PASS" if not bad else "FAIL: " + "; ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
