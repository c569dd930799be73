#!/usr/bin/env python3
"""Session 17: tests/adversarial/supervisor's attacks on cuda (the CPU test is
tests/python/test_supervisor.py): all but the two that wait out a limit in one run beside two
honest experts, then close_pipes_and_hang alone with --timeout 8. Prints each status against the
README's expected ones. Then a blocking writer (below), with --timeout 20: it names each pipe
before it writes there (its stderr is in the timeout's detail), so that the pipe it blocks on
shows. Each kbx's stderr goes to OUT_DIR/<run>.log.   python3 attacks.py OUT_DIR"""
import pathlib
import re
import sqlite3
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
ATTACKS = ROOT / "tests" / "adversarial" / "supervisor"
KBX = ROOT / ".carry" / "bin" / "kbx"


BLOCKING = """import os, stat, sys
import triton


@triton.jit
def _unused(x_ptr):
    pass


def sub(input, other, *, alpha=1, out=None):
    import torch
    torch.cuda.synchronize()
    line = b'{"ev":"log","text":"x"}\\n' * 4096
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(2, f"fd {fd} {os.readlink(f'/proc/self/fd/{fd}')}: ".encode())
                os.write(fd, line)
                os.write(2, b"written; ")
        except OSError as e:
            os.write(2, f"{e.strerror}; ".encode())
    os.write(2, b"all written")
    raise RuntimeError("wrote to every pipe")
"""


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


def run(out, name, attacks, honest, *extra, text=None):
    cands = out / name
    if text:
        (cands / "Math").mkdir(parents=True, exist_ok=True)
        (cands / "Math" / "sub.py").write_text(text)
    for path in attacks:
        place(cands, ATTACKS / path, path.split("/", 1)[1])
    for rel in honest:
        place(cands, ROOT / "solutions" / "expert" / rel, rel)
    db = out / f"{name}.db"
    t0 = time.monotonic()
    proc = subprocess.run([str(KBX), "eval", "--method", name, "--candidates", str(cands),
                           "--device", "cuda", "--db", str(db), "--fresh",
                           "--work", f"/dev/shm/kbx-attacks-{name}", *extra],
                          stdout=subprocess.DEVNULL, stderr=open(out / f"{name}.log", "w"),
                          timeout=150)
    print(f"{name}: exit {proc.returncode}, {time.monotonic() - t0:.1f} s")
    if proc.returncode:
        print((out / f"{name}.log").read_text()[-2000:])
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
    blocking = run(out, "blocking", [], [], "--timeout", "20", text=BLOCKING)
    with sqlite3.connect(out / "blocking.db") as con:
        print("blocking writer:", con.execute("SELECT status, detail FROM results").fetchall())
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
