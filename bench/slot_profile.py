#!/usr/bin/env python3
"""Where the GPU's timing slot went in a `kbx eval` run logged with KBX_DEBUG_TIMING=1 (issue 14).

Sums, per task, the reference worker's steps of its full-size cases (which hold the slot: make,
save_*, call, shadow, eager timing; slot_wait is time spent waiting for it) and the candidate's
timed loops, slot span (from the first event after its slot request to its exit) and the part of
it after its `done` event (the process's teardown, slot still held), and prints
the totals and the tasks that held the slot longest.
    python3 bench/slot_profile.py eval.log[.gz] [--top 12]
"""
import argparse
import collections
import gzip
import re
import statistics

REF = re.compile(r"kbx: reference (\S+) (\S+) \((\w+)\): ([\d.]+) s (.*)")
TIMELINE = re.compile(r"kbx: (\S+): timeline: (.*)")
STEPS = ("slot_wait", "make", "save_in", "call", "save_ref", "shadow", "eager", "compiled")
# The parts of "eager" (the timer's own steps; logs from session 9 on)
EAGER_PARTS = ("eager_estimate", "eager_batches", "eager_flush")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    ref = collections.defaultdict(collections.Counter)
    cand_timing, cand_span, cand_teardown = collections.Counter(), {}, {}
    for line in read(args.log):
        m = REF.match(line)
        if m:
            task, _case, tier, seconds, rest = m.groups()
            if tier in ("full", "fresh"):
                ref[task]["held"] += float(seconds)
                for step, value in re.findall(r"(\w+)=([\d.]+)", rest):
                    ref[task][step] += float(value)
            continue
        m = TIMELINE.match(line)
        if m:
            task, text = m.groups()
            for _case, seconds in re.findall(r"timing (\S+) seconds=([\d.]+)", text):
                cand_timing[task] += float(seconds)
            events = [(float(t), name) for t, name in re.findall(r"\| ([\d.]+) (\w+)", text)]
            asked = [i for i, (_, name) in enumerate(events) if name == "slot_wanted"]
            exited = re.search(r"exited ([\d.]+)", text)
            if asked and asked[0] + 1 < len(events) and exited:
                cand_span[task] = float(exited.group(1)) - events[asked[0] + 1][0]
                done = [t for t, name in events if name == "done"]
                if done:  # the slot is held until the process has exited
                    cand_teardown[task] = float(exited.group(1)) - done[-1]
    ref_held = sum(c["held"] for c in ref.values())
    print(f"references: {len(ref)} tasks, slot held {ref_held:.1f} s "
          f"(median {statistics.median([c['held'] for c in ref.values()] or [0]):.2f} s per task)")
    print("  by step: " + ", ".join(f"{s} {sum(c[s] for c in ref.values()):.1f} s" for s in STEPS))
    print("  of eager: " + ", ".join(f"{s[6:]} {sum(c[s] for c in ref.values()):.1f} s"
                                     for s in EAGER_PARTS))
    print(f"candidates: {len(cand_span)} jobs, slot span {sum(cand_span.values()):.1f} s, "
          f"of which timed loops {sum(cand_timing.values()):.1f} s and from `done` to the "
          f"process's exit {sum(cand_teardown.values()):.1f} s")
    per_task = {t: ref[t]["held"] + cand_span.get(t, 0.0) for t in set(ref) | set(cand_span)}
    print(f"slot per task (reference + candidate): median "
          f"{statistics.median(per_task.values() or [0]):.2f} s, mean "
          f"{statistics.mean(per_task.values() or [0]):.2f} s")
    for task, held in sorted(per_task.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {task:55s} {held:7.2f} s (reference eager {ref[task]['eager']:.2f} s, "
              f"candidate timed {cand_timing[task]:.2f} s)")


if __name__ == "__main__":
    main()
