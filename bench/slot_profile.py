#!/usr/bin/env python3
"""Where the GPU's timing slot went in a `kbx eval` run logged with KBX_DEBUG_TIMING=1 (issue 14).

Sums, per task, the reference worker's steps of its full-size cases (which hold the slot: make,
save_*, call, shadow, eager timing; slot_wait is time spent waiting for it) and the candidate's
timed loops, slot span (from the first event after its slot request to its exit) and the part of
it after its `done` event (the process's teardown, slot still held), and prints
the totals and the tasks that held the slot longest. With --trace (the file KBX_SLOT_TRACE named
during the run: every acquire and release of the slot), also how busy the slot was: held
seconds over the span from its first acquire to its last release, the idle gaps by size, and
the holders that came after the longest ones; and from kbx's own steps in the same trace (session
12 on), where the pipeline waited: references, the cap on live tasks, the lanes.
    python3 bench/slot_profile.py eval.log[.gz] [--top 12] [--trace slot-trace.txt]
"""
import argparse
import collections
import gzip
import math
import re
import statistics

REF = re.compile(r"kbx: reference (\S+) (\S+) \((\w+)\): ([\d.]+) s (.*)")
TIMELINE = re.compile(r"kbx: (\S+): timeline: (.*)")
# A reference worker's life (logs from session 43 on): seconds from its start to its hello and to
# its "done", when it exited, and how long other jobs' quiet hosts kept it frozen
REF_WORKER = re.compile(r"kbx: reference worker for \S+ \((\d+) tasks\): .*hello after "
                        r"([\d.-]+) s, done at ([\d.-]+) s, exited at ([\d.-]+) s, "
                        r"frozen ([\d.-]+) s")
STEPS = ("slot_wait", "make", "save_in", "call", "save_ref", "shadow", "remake", "eager",
         "compiled")
# The parts of "eager" (the timer's own steps; logs from session 9 on)
EAGER_PARTS = ("eager_estimate", "eager_batches", "eager_flush")
# Of the slot's time: the wait for the answer to quiet_wanted (the other jobs being frozen;
# logs from session 16 on: eager_quiet_wait of references, quiet_wait_s of candidates' timings)
QUIET_WAIT = re.compile(r"quiet_wait_s=([\d.]+)")
# The parts of a candidate's timing (logs from session 28 on): the variants' setup, the timer's
# warm-up estimate, the wait for a quiet host, its batches (of which the timed calls' own time,
# timed_s, and the GPU holds at the batches' heads, holds_s: logs from session 36 on) and its
# probe flushes
TIMING_PARTS = ("seconds", "setup_s", "estimate_s", "quiet_wait_s", "batches_s", "timed_s",
                "holds_s", "flush_s", "samples")


def timing_parts(text):
    """{part: sum over the timeline's timing events} of TIMING_PARTS, and the number of them."""
    parts, n = collections.Counter(), 0
    for segment in text.split(" | "):
        fields = segment.split()
        if len(fields) < 3 or fields[1] != "timing":
            continue
        n += 1
        for key, value in (f.split("=", 1) for f in fields[3:] if "=" in f):
            if key in TIMING_PARTS:
                parts[key] += float(value)
    return parts, n


def print_timing_parts(parts, n):
    if not n or "batches_s" not in parts:
        return
    named = sum(parts[k] for k in ("setup_s", "estimate_s", "quiet_wait_s", "batches_s",
                                   "flush_s"))
    holds = f", the holds {parts['holds_s']:.1f} s" if "holds_s" in parts else ""
    print(f"  of {n} timings ({parts['seconds']:.1f} s, {parts['samples']:.0f} timed calls): "
          f"setup {parts['setup_s']:.1f} s, estimate {parts['estimate_s']:.1f} s, quiet wait "
          f"{parts['quiet_wait_s']:.1f} s, batches {parts['batches_s']:.1f} s (the calls' own "
          f"{parts['timed_s']:.1f} s{holds}), flush {parts['flush_s']:.1f} s, the rest "
          f"{parts['seconds'] - named:.1f} s")


def reference_workers(lines):
    """{workers, tasks, hello, done, teardown, frozen}: sums over the log's reference workers
    (teardown: from `done` to the exit); None when the log has no such line."""
    rows = [m.groups() for m in map(REF_WORKER.search, lines) if m]
    if not rows:
        return None
    ended = [(float(done), float(exited)) for _, _, done, exited, _ in rows if float(done) >= 0]
    return {"workers": len(rows), "tasks": sum(int(r[0]) for r in rows),
            "hello": sum(max(0.0, float(r[1])) for r in rows),
            "done": sum(done for done, _ in ended),
            "teardown": sum(exited - done for done, exited in ended),
            "frozen": sum(float(r[4]) for r in rows)}


def print_reference_workers(lines):
    w = reference_workers(lines)
    if w is None:
        return
    share = 100 * w["frozen"] / w["done"] if w["done"] else 0.0
    print(f"  reference workers: {w['workers']} ({w['tasks']} tasks), {w['done']:.1f} s from "
          f"their start to `done` in all, of which {w['frozen']:.1f} s ({share:.0f}%) frozen for "
          f"other jobs' timed loops and {w['hello']:.1f} s to their hello; then "
          f"{w['teardown']:.1f} s to their exit")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def read_trace(path):
    """[(acquire_s, release_s, holder)] per slot lock file, in time order."""
    held, open_at = collections.defaultdict(list), {}
    for line in read(path):  # plain or gzipped
        parts = line.split(maxsplit=3)
        if len(parts) < 4:
            continue
        t, what, lock, holder = float(parts[0]), parts[1], parts[2], parts[3].strip()
        if what == "acquire":
            open_at[lock] = (t, holder)
        elif what == "release" and lock in open_at:
            start, who = open_at.pop(lock)
            held[lock].append((start, t, who))
    return {lock: sorted(spans) for lock, spans in held.items()}


def print_trace(path, top):
    for lock, spans in read_trace(path).items():
        if not spans:
            continue
        first, last = spans[0][0], spans[-1][1]
        busy = sum(end - start for start, end, _ in spans)
        gaps = [(spans[i + 1][0] - spans[i][1], spans[i][1] - first, spans[i + 1][2])
                for i in range(len(spans) - 1)]
        idle = sum(g for g, _, _ in gaps)
        print(f"slot {lock}: {len(spans)} holds over {last - first:.1f} s, held {busy:.1f} s "
              f"({100 * busy / max(last - first, 1e-9):.0f}%), idle {idle:.1f} s")
        bins = [(0.01, "<10 ms"), (0.1, "10-100 ms"), (1.0, "0.1-1 s"), (float("inf"), ">1 s")]
        lo = 0.0
        for hi, name in bins:
            part = [g for g, _, _ in gaps if lo <= g < hi]
            print(f"  gaps {name:>9}: {len(part):4d}, {sum(part):6.1f} s")
            lo = hi
        for g, at, who in sorted(gaps, reverse=True)[:top]:
            print(f"  idle {g:6.2f} s at +{at:6.1f} s, then {who}")


def read_pipeline(path):
    """[(seconds, what, who)] of the run's own steps (lines "<t> <what> pipeline <who>")."""
    out = []
    for line in read(path):
        parts = line.split(maxsplit=3)
        if len(parts) == 4 and parts[2] == "pipeline":
            out.append((float(parts[0]), parts[1], parts[3].strip()))
    return out


def spans(steps, start, end):
    """{who: [(t_start, t_end)]} from matching start and end steps of the same who."""
    opened, out = collections.defaultdict(list), collections.defaultdict(list)
    for t, what, who in steps:
        if what == start:
            opened[who].append(t)
        elif what == end and opened[who]:
            out[who].append((opened[who].pop(0), t))
    return out


def mean_concurrency(intervals, first, last):
    return sum(e - s for s, e in intervals) / max(last - first, 1e-9)


def print_pipeline(path):
    """Where the run's pipeline waited (kbx from session 12 on traces its steps): how many
    reference chunks and jobs ran at once on average, how long the reference lanes were held at
    the cap on tasks with files, and a task's way from its references to its verdict."""
    steps = read_pipeline(path)
    if not steps:
        return
    first, last = steps[0][0], steps[-1][0]
    refs = [iv for ivs in spans(steps, "refs_start", "refs_done").values() for iv in ivs]
    jobs = spans(steps, "job_start", "job_end")
    gate = [iv for ivs in spans(steps, "gate_wait", "gate_pass").values() for iv in ivs]
    fed = {who: t for t, what, who in steps if what == "fed"}
    all_jobs = [iv for ivs in jobs.values() for iv in ivs]
    print(f"pipeline over {last - first:.1f} s: reference chunks {len(refs)} "
          f"(on average {mean_concurrency(refs, first, last):.2f} at once), jobs {len(all_jobs)} "
          f"(on average {mean_concurrency(all_jobs, first, last):.2f} at once)")
    print(f"  reference lanes held at the cap on live tasks: {sum(e - s for s, e in gate):.1f} s "
          f"in {sum(1 for s, e in gate if e - s > 0.01)} waits")
    room = [iv for ivs in spans(steps, "room_wait", "room_pass").values() for iv in ivs]
    if room:  # kbx from session 13 on: chunks wait for room for their files (sched/room.h)
        print(f"  reference lanes held for room (memory, work folder): "
              f"{sum(e - s for s, e in room):.1f} s in {sum(1 for s, e in room if e - s > 0.01)} "
              f"waits")
    waits = [jobs[t][0][0] - fed[t] for t in fed if jobs.get(t)]
    lives = [max(e for _, e in jobs[t]) - fed[t] for t in fed if jobs.get(t)]
    runs = [e - s for s, e in all_jobs]
    if waits:
        print(f"  a task from fed to its first job: median {statistics.median(waits):.2f} s; "
              f"job: median {statistics.median(runs):.2f} s, mean {statistics.mean(runs):.2f} s; "
              f"live (fed to last job's end): mean {statistics.mean(lives):.2f} s")
    live_at = [sum(1 for t in fed if fed[t] <= x and jobs.get(t) and max(e for _, e in jobs[t]) > x)
               for x in [first + k * (last - first) / 50 for k in range(50)]]
    print(f"  live tasks, sampled 50 times: mean {statistics.mean(live_at):.1f}, "
          f"max {max(live_at)}")
    starved, idle_with_ready, lanes = lane_idleness(steps)
    print(f"  fewer jobs than the lanes ({lanes}, the most seen at once): {starved:.1f} s with no "
          f"task ready (the references behind), {idle_with_ready:.1f} s with one ready")
    hushes = hush_costs(steps)
    if hushes:  # kbx from session 19 on: what each quiet host's freezing cost its holder
        slow = sum(1 for h in hushes if h["freeze"] + h["wait"] > 0.01)
        bound = sum(1 for h in hushes if h.get("host_bound", 1))
        print(f"  quiet hosts: {len(hushes)} ({bound} for host-bound calls, kbx's comparisons "
              f"paused), freezing {sum(h['freeze'] for h in hushes):.1f} s, "
              f"then waiting for the cgroups to stop {sum(h['wait'] for h in hushes):.1f} s "
              f"({slow} over 10 ms; {sum(1 for h in hushes if h['running'])} ended with a cgroup "
              f"still running; members frozen per hush: mean "
              f"{statistics.mean(h['frozen'] for h in hushes):.1f})")


def hush_costs(steps):
    """[{freeze, wait, frozen, running[, host_bound]}] of the trace's hush lines
    ("freeze=<s>,wait=<s>,frozen=<n>,running=<n>", then ",host_bound=<0|1>" from session 22 on)."""
    out = []
    for _, what, who in steps:
        if what == "hush":
            fields = dict(kv.split("=", 1) for kv in who.split(","))
            out.append({k: float(v) for k, v in fields.items()})
    return out


def lane_idleness(steps):
    """(seconds with fewer jobs than lanes and no task ready, the same with a task ready, lanes):
    lanes are the most jobs seen at once; a task is ready from `fed` to its first job_start."""
    running, ready, lanes = set(), set(), 0
    for _, what, who in steps:
        if what == "job_start":
            running.add(who)
            lanes = max(lanes, len(running))
        elif what == "job_end":
            running.discard(who)
    running.clear()
    starved = idle_with_ready = 0.0
    last = steps[0][0]
    for t, what, who in steps:
        if len(running) < lanes:
            if ready:
                idle_with_ready += t - last
            else:
                starved += t - last
        last = t
        if what == "fed":
            ready.add(who)
        elif what == "job_start":
            ready.discard(who)
            running.add(who)
        elif what == "job_end":
            running.discard(who)
    return starved, idle_with_ready, lanes


def _overlap(a, b, lo, hi):
    """Seconds of [a, b] inside [lo, hi]."""
    return max(0.0, min(b, hi) - max(a, lo))


def candidate_holds(trace_path, lines):
    """{task: (before, loops, after)}: a candidate's slot held, from each grant to its release
    (several under --slot-at launch, which hands it back between full-size calls), split at its
    first and last timed loop (session 18 on: the timeline's quiet_wanted, else its first timing
    event less its seconds). Timelines count from the spawn, the trace from the job's start, a
    few milliseconds earlier: `before` is that much too long."""
    start = {who: t for t, what, who in read_pipeline(trace_path) if what == "job_start"}
    held = {}  # task -> [(acquired, released)]
    for spans_of_lock in read_trace(trace_path).values():
        for acquired, freed, holder in spans_of_lock:
            if holder.startswith("candidate "):
                held.setdefault(holder[len("candidate "):], []).append((acquired, freed))
    out = {}
    for line in lines:
        m = TIMELINE.match(line)
        if not m or m.group(1) not in held or m.group(1) not in start:
            continue
        task, text = m.groups()
        events = [(float(t), name) for t, name in re.findall(r"\| ([\d.]+) (\w+)", text)]
        timings = [(float(t), float(sec))
                   for t, sec in re.findall(r"\| ([\d.]+) timing \S+ seconds=([\d.]+)", text)]
        if not timings:
            continue
        asked = [t for t, name in events if name == "quiet_wanted"]
        first = min(asked[:1] + [timings[0][0] - timings[0][1]])
        spans_ = [(a - start[task], r - start[task]) for a, r in held[task]]
        last = min(timings[-1][0], max(r for _, r in spans_))
        out[task] = tuple(sum(_overlap(a, r, lo, hi) for a, r in spans_)
                          for lo, hi in ((-math.inf, first), (first, last), (last, math.inf)))
    return out


def print_candidate_holds(trace_path, lines, top):
    holds = candidate_holds(trace_path, lines)
    if not holds:
        return
    before, loops, after = (sum(h[i] for h in holds.values()) for i in range(3))
    print(f"candidates' slot, grant to release ({len(holds)} jobs): before the first timed loop "
          f"(full-size judged calls) {before:.1f} s, timed loops {loops:.1f} s, after the last "
          f"{after:.1f} s")
    for task, (b, lo, a) in sorted(holds.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {task:55s} before {b:5.2f} s, loops {lo:5.2f} s, after {a:5.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--trace", help="the slot trace of the run (KBX_SLOT_TRACE)")
    args = ap.parse_args()
    if args.trace:
        print_trace(args.trace, args.top)
        print_pipeline(args.trace)
    ref = collections.defaultdict(collections.Counter)
    cand_timing, cand_span, cand_teardown = collections.Counter(), {}, {}
    cand_quiet_wait = 0.0
    cand_parts, cand_timings = collections.Counter(), 0
    hushes, hushed = 0, 0.0  # candidates' quiet hosts: quiet_wanted to quiet_done
    lines = read(args.log)
    for line in lines:
        m = REF.match(line)
        if m:
            task, _case, tier, seconds, rest = m.groups()
            if tier in ("full", "fresh"):
                steps = {step: float(value) for step, value in re.findall(r"(\w+)=([\d.]+)", rest)}
                if "remake" in steps or "eager" not in steps:  # from session 12 on: only the
                    # eager loops hold the slot (none when the timings were cached)
                    ref[task]["held"] += sum(steps.get(s, 0.0)
                                             for s in ("remake", "eager", "compiled"))
                else:  # until session 11 the whole full-size case held it
                    ref[task]["held"] += float(seconds)
                for step, value in steps.items():
                    ref[task][step] += value
            continue
        m = TIMELINE.match(line)
        if m:
            task, text = m.groups()
            for _case, seconds in re.findall(r"timing (\S+) seconds=([\d.]+)", text):
                cand_timing[task] += float(seconds)
            cand_quiet_wait += sum(float(w) for w in QUIET_WAIT.findall(text))
            parts, n = timing_parts(text)
            cand_parts.update(parts)
            cand_timings += n
            events = [(float(t), name) for t, name in re.findall(r"\| ([\d.]+) (\w+)", text)]
            asked_at = None
            for t, name in events:
                if name == "quiet_wanted" and asked_at is None:  # a kept hush: its first ask
                    asked_at = t
                elif name == "quiet_done" and asked_at is not None:
                    hushes, hushed, asked_at = hushes + 1, hushed + t - asked_at, None
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
                                     for s in EAGER_PARTS + ("eager_quiet_wait",)))
    print_reference_workers(lines)
    print(f"candidates: {len(cand_span)} jobs, slot span {sum(cand_span.values()):.1f} s (first "
          f"grant to exit; under --slot-at launch it holds the waits between full-size calls), "
          f"of which timed loops {sum(cand_timing.values()):.1f} s and from `done` to the "
          f"process's exit {sum(cand_teardown.values()):.1f} s; waits for a quiet host "
          f"{cand_quiet_wait:.1f} s")
    print_timing_parts(cand_parts, cand_timings)
    print(f"  quiet hosts (every other job frozen): {hushes}, {hushed:.1f} s in all")
    # the trace's holds where there is one (session 35: a job's span counted 9.8 s of waiting for
    # the slot between two full-size calls as held)
    holds = candidate_holds(args.trace, lines) if args.trace else {}
    cand_held = {t: sum(h) for t, h in holds.items()} or cand_span
    per_task = {t: ref[t]["held"] + cand_held.get(t, 0.0) for t in set(ref) | set(cand_held)}
    print(f"slot per task (reference + candidate{', holds from the trace' if holds else ''}): "
          f"median "
          f"{statistics.median(per_task.values() or [0]):.2f} s, mean "
          f"{statistics.mean(per_task.values() or [0]):.2f} s")
    for task, held in sorted(per_task.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {task:55s} {held:7.2f} s (reference eager {ref[task]['eager']:.2f} s, "
              f"candidate timed {cand_timing[task]:.2f} s)")
    if args.trace:
        print_candidate_holds(args.trace, lines, args.top)


if __name__ == "__main__":
    main()
