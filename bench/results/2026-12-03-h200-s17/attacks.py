#!/usr/bin/env python3
"""Session 17: tests/adversarial/supervisor's attacks on cuda (the CPU test is
tests/python/test_supervisor.py): all but the two that wait out a limit in one run beside two
honest experts, then close_pipes_and_hang alone with --timeout 8. Prints each status against the
README's expected ones.   python3 attacks.py OUT_DIR"""
import pathlib
import re
import sqlite3
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
ATTACKS = ROOT / "tests" / "adversarial" / "supervisor"
KBX = ROOT / ".carry" / "bin" / "kbx"


def expected():
    out = {}
    for line in (ATTACKS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].startswith("`"):
            path = cells[1].strip("`")
            out[path.split("/")[0]] = (path, re.findall(r"`([a-z_]+)`", cells[2]))
    return out


def place(folder, source, rel):
    dest = folder / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = source.read_text()
    for line in text.splitlines():
        if line.startswith("# append: "):
            text += "\n" + (ROOT / line[len("# append: "):].strip()).read_text()
    dest.write_text(text)


def run(out, name, attacks, honest, *extra):
    cands = out / name
    for path in attacks:
        place(cands, ATTACKS / path, path.split("/", 1)[1])
    for rel in honest:
        place(cands, ROOT / "solutions" / "expert" / rel, rel)
    db = out / f"{name}.db"
    t0 = time.monotonic()
    proc = subprocess.run([str(KBX), "eval", "--method", name, "--candidates", str(cands),
                           "--device", "cuda", "--db", str(db), "--fresh",
                           "--work", f"/dev/shm/kbx-attacks-{name}", *extra],
                          capture_output=True, text=True, timeout=400)
    print(f"{name}: exit {proc.returncode}, {time.monotonic() - t0:.1f} s")
    if proc.returncode:
        print(proc.stderr[-2000:])
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT task, status FROM results"))


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    exp = expected()
    alone = ("slow_call", "close_pipes_and_hang")
    got = run(out, "attacks", [p for a, (p, _) in exp.items() if a not in alone],
              ["Activation/gelu.py", "Math/softmax.py"], "--jobs", "2")
    got.update(run(out, "hang", [exp["close_pipes_and_hang"][0]], [], "--timeout", "8"))
    bad = 0
    for honest in ("Activation/gelu", "Math/softmax"):
        ok = got.get(honest) == "passed"
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} honest {honest}: {got.get(honest)}")
    for attack, (path, allowed) in exp.items():
        if attack == "slow_call":
            continue
        task = path.split("/", 1)[1][:-3]
        ok = got.get(task) in allowed
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {attack} ({task}): {got.get(task)} (expected {allowed})")
    print(f"{bad} unexpected")


main()
