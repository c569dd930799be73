#!/usr/bin/env python3
"""Does a memory-bound call's speed follow where its freshly allocated buffers land while other
processes fill and fragment the GPU's memory?

Session 38's references timed as their own candidates (H100, cold run): within one task's eager
timings, made one after another in one process within a fraction of a second, exactly one full
case ran 11-17% slower than the same call in the candidate's worker and its neighbours did not
(relu_fp16: perf_16M 0.988, perf_64M 1.171, perf_odd 1.014, perf_long 0.997; the same in eight
tasks). So the slow state belongs to a case's own buffers, made afresh for its eager timing, not
to the process or to a period of the run. Session 39's bench/placement_gpu.py found no offset
within one fresh allocation on an idle GPU that was slower (all within 1%). What differs in a
run: the GPU's memory is nearly full of other workers' allocations, made and freed all the time.

This script times each workload over many rounds, each on buffers allocated afresh (behind a
spacer of random size, so that each round's buffers land elsewhere): first on an idle GPU, then
with --hogs processes filling the GPU's memory to each --fill in fragments (chunks of random
sizes, every other one freed back to the driver; with --small-fill, fragments of 64 KiB-1 MiB,
below the driver's 2 MiB pages), doing no GPU work. Per workload and condition
it prints the fastest, median and slowest round and how many rounds were over --apart behind the
fastest: if rounds under pressure fall into a slow state about 15% behind and idle ones do not,
the placement the driver gives under pressure is the cause. Each round is timed three ways: as
kbx's timer does (a new output each call, freed before the next: the same block every call), on
copies of its inputs (other input blocks), and with the last three outputs kept alive (other
output blocks, as KBX_TIMER_KEEP_OUTPUTS=3): in a slow round, the way that escapes the slow state
names the buffers that carry it. Every condition runs twice: with the round's buffers from new
segments (a fresh candidate worker's case) and cut from segments the caching allocator kept from
freed temporaries (a reference worker's: between sessions 37 and 38 the eager side's timing of
the same case changed by more than 8% on 17 of 598 cases, the candidate side's on 1). Any GPU;
about two minutes.

Session 40 (H100): on an idle GPU too, 160 of 480 rounds were slow the first way, 1 of 480 with
the outputs kept. Yet kbx's own timer with KBX_TIMER_KEEP_OUTPUTS=3 left every sample of a slow
eager timing slow (22 cases apart in a cold run of the 184 references, against 7-12 without).
So each round is also timed twice by kbx's own CudaTimer (its L2 scrub before every call, its
holds and batches) on the same inputs, without and with three outputs kept (--no-kbx-timer:
not): whether kbx's timer sees the same state as the plain events. And for up to three slow
and three fast rounds it prints where their buffers lay (each input's offset into a 2 MiB page,
the output's distance from each input): whether the slow pairs share a place.

    python3 bench/pressure_gpu.py [--rounds 16] [--reps 20] [--hogs 4] [--fill 0.9,0.95]
        [--small-fill 0.9] [--apart 0.08] [--out f.json] [--no-kbx-timer]
"""
import argparse
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from placement_gpu import MIB, time_median, workloads  # noqa: E402

import torch  # noqa: E402


def summarize(times, apart):
    """(fastest, median, slowest, rounds over apart behind the fastest) of per-round medians."""
    fast = min(times)
    slow_rounds = sum(1 for t in times if t > fast * (1 + apart))
    return fast, statistics.median(times), max(times), slow_rounds


def line(name, label, times, apart):
    if not times:
        return f"{name} {label}: no round had room"
    fast, mid, slow, slow_rounds = summarize(times, apart)
    return (f"{name} {label}: fastest {fast:.4f} ms, median {mid:.4f}, slowest {slow:.4f} "
            f"({(slow / fast - 1) * 100:.1f}% behind); {slow_rounds} of {len(times)} rounds over "
            f"{apart * 100:.0f}% behind")


def slow_rounds_line(times, apart):
    """The rounds whose `fresh` median was over apart behind the fastest round, each with what the
    other ways gave in the same round (input copies and the output ring: which buffers carry the
    slow state; kbx's own timer, when timed)."""
    if not times["fresh"]:
        return "slow rounds: none timed"
    fast = min(times["fresh"])
    ways = [w for w in times if len(times[w]) == len(times["fresh"])]
    rows = ["/".join(f"{ms:.4f}" for ms in row) for row in zip(*(times[w] for w in ways))
            if row[0] > fast * (1 + apart)]
    names = "/".join(w.replace("_", " ") for w in ways)
    return f"slow rounds ({names} ms): {', '.join(rows) or 'none'}"


def _hog(share_bytes, seed, small):
    """A process that holds about share_bytes of the GPU's memory in fragments, then waits for
    its standard input to close: chunks of random sizes, every other one given back to the driver
    and the share made up with smaller ones. Large: chunks of 2-256 MiB, then 2-64 MiB. Small
    (run without torch's caching allocator, so that each chunk is its own cudaMalloc): 64 KiB to
    1 MiB, below the driver's 2 MiB pages."""
    rng = random.Random(seed)
    chunks = []
    unit = 64 * 1024 if small else MIB

    def fill(lo, hi):
        held = sum(c.numel() for c in chunks)
        while held < share_bytes:
            size = min(rng.randrange(lo, hi + 1) * unit, share_bytes - held + unit)
            try:
                chunks.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            except torch.cuda.OutOfMemoryError:
                return
            held += size

    fill(*((1, 16) if small else (2, 256)))
    del chunks[::2]
    torch.cuda.empty_cache()
    fill(*((1, 8) if small else (2, 64)))
    print("ready", flush=True)
    sys.stdin.read()


def _start_hogs(count, fill, seed, small):
    free, total = torch.cuda.mem_get_info()
    share = int((free - (1 - fill) * total) / max(count, 1))
    if share <= 0:
        return []
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1") if small else None
    hogs = []
    for k in range(count):  # one after another: each fragments what the last left
        argv = [sys.executable, __file__, "--hog", str(share), "--seed", str(seed + k)]
        hogs.append(subprocess.Popen(argv + (["--small"] if small else []), env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        hogs[-1].stdout.readline()  # "ready"
    return hogs


def _ring_call(call, ins, ring):
    """The call with a new output each time, the last `ring` outputs kept alive (as
    KBX_TIMER_KEEP_OUTPUTS does), so that consecutive calls write to different blocks."""
    kept = []

    def run():
        kept.append(call(ins, torch.empty_like(ins[0])))
        del kept[:-ring]
    return run


def places_lines(fresh, places, apart, most=3):
    """Where the buffers of up to `most` slow rounds (fresh median over apart behind the fastest)
    and of as many fast ones lay (place_line): whether the slow ones share a place."""
    if not fresh or len(places) != len(fresh):
        return []
    fast = min(fresh)
    slow = [(ms, p) for ms, p in zip(fresh, places) if ms > fast * (1 + apart)][:most]
    quick = [(ms, p) for ms, p in zip(fresh, places) if ms <= fast * (1 + apart)][:most]
    return ([f"slow {ms:.4f} ms: {place_line(p)}" for ms, p in slow]
            + [f"fast {ms:.4f} ms: {place_line(p)}" for ms, p in quick])


def _kbx_timed(timer, keep_outputs, fn):
    """The median ms of fn timed by kbx's own CudaTimer (its L2 scrub before every call, its holds
    and batches), with keep_outputs earlier outputs alive through each call."""
    timer.keep_outputs = keep_outputs
    return statistics.median(timer.run(fn))


def place_of(ins, out):
    """Where a round's buffers lie: each input's address modulo 2 MiB (the driver's page) and the
    output's distance from each input, in bytes."""
    return {"in_mod_2mib": [t.data_ptr() % (2 * MIB) for t in ins],
            "out_minus_in": [out.data_ptr() - t.data_ptr() for t in ins]}


def place_line(place):
    """place_of's record in a few words (MiB)."""
    mods = ",".join(f"{m / MIB:.3f}" for m in place["in_mod_2mib"])
    gaps = ",".join(f"{g / MIB:+.1f}" for g in place["out_minus_in"])
    return f"inputs at {mods} MiB into a 2 MiB page, output {gaps} MiB from them"


def _rounds(workload, rounds, reps, rng, carved, timer=None, places=None):
    """Per round: a spacer of random size and fresh inputs, then three medians: the call with a
    new output each call (as kbx's timer, which frees each output: the same block every call);
    the same on copies of the inputs made while the first ones are still held (other input
    blocks); with the last three outputs kept alive (other output blocks). carved: the round's
    buffers are cut from segments the caching allocator keeps from larger temporaries made and
    freed first (as a reference worker's are, after its float64 shadows and other cases), not
    from new ones (as a fresh candidate worker's mostly are). Everything is freed back to the
    driver after the round. Returns {variant: [median per round]}; places, when given, gets each
    timed round's place_of."""
    name, dtype, n, n_in, call = workload
    times = {"fresh": [], "input_copies": [], "output_ring": []}
    if timer is not None:
        times |= {"kbx_timer": [], "kbx_timer_ring": []}
    for _ in range(rounds):
        placed = len(places) if places is not None else 0
        try:
            row = _round(dtype, n, n_in, call, reps, rng, carved, timer, places)
        except torch.cuda.OutOfMemoryError:
            row = None  # no room under this condition: the round is left out
            if places is not None:
                del places[placed:]
        torch.cuda.empty_cache()
        if row is None:
            print(f"  {name}: a round left out (out of the GPU's memory)", flush=True)
            continue
        for variant, ms in zip(times, row):
            times[variant].append(ms)
    return times


def _round(dtype, n, n_in, call, reps, rng, carved, timer=None, places=None):
    """One round of _rounds: (fresh, input_copies, output_ring) medians, then with a timer the
    same inputs timed by it (a new output each call, then three kept: KBX_TIMER_KEEP_OUTPUTS=3)."""
    if carved:
        largest = max(256, min(1024, torch.cuda.mem_get_info()[0] // (6 * MIB)))
        temporaries = [torch.empty(rng.randrange(256, largest + 1) * MIB, dtype=torch.uint8,
                                   device="cuda") for _ in range(3)]
        del temporaries  # kept by the caching allocator, split for what follows
    spacer = torch.empty(rng.randrange(0, 512) * MIB + 1, dtype=torch.uint8, device="cuda")
    ins = [torch.empty(n, dtype=dtype, device="cuda").uniform_(-1, 1) for _ in range(n_in)]
    if places is not None:  # the block the timed calls' outputs get: this one, freed first
        out = torch.empty_like(ins[0])
        places.append(place_of(ins, out))
        del out
    fresh = time_median(lambda: call(ins, torch.empty_like(ins[0])), reps)
    copies = [t.clone() for t in ins]
    copied = time_median(lambda: call(copies, torch.empty_like(copies[0])), reps)
    del copies
    ring = time_median(_ring_call(call, ins, 3), reps)
    by_kbx = ()
    if timer is not None:
        fn = lambda: call(ins, torch.empty_like(ins[0]))  # noqa: E731
        by_kbx = (_kbx_timed(timer, 0, fn), _kbx_timed(timer, 3, fn))
    del spacer, ins
    return (fresh, copied, ring) + by_kbx


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--hogs", type=int, default=4, help="processes filling the GPU's memory")
    ap.add_argument("--fill", default="0.9,0.95",
                    help="of the GPU's memory in use with the hogs: one condition each")
    ap.add_argument("--apart", type=float, default=0.08)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--small-fill", default="0.9",
                    help="the same with fragments of 64 KiB-1 MiB ('' for none)")
    ap.add_argument("--hog", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--small", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="write every round's median as JSON here")
    ap.add_argument("--no-kbx-timer", action="store_true",
                    help="leave out the rounds' timing by kbx's own CudaTimer")
    args = ap.parse_args()
    if args.hog is not None:
        _hog(args.hog, args.seed, args.small)
        return 0
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    rng = random.Random(args.seed)
    timer = None
    if not args.no_kbx_timer:  # made once, before any round: its 256 MiB scrub stays put
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
        from kbx_worker.timer import CudaTimer
        timer = CudaTimer(torch.device("cuda"))
    results = {}
    conditions = [(None, False)] + [(float(f), False) for f in args.fill.split(",") if f] + \
        [(float(f), True) for f in args.small_fill.split(",") if f]
    for fill, small in conditions:
        label = "idle" if fill is None else f"fill{fill:g}" + ("_small" if small else "")
        hogs = [] if fill is None else _start_hogs(args.hogs, fill, args.seed + 100, small)
        free, total = torch.cuda.mem_get_info()
        print(f"== {label}: {len(hogs)} hogs, {(1 - free / total) * 100:.0f}% of the GPU's "
              f"memory in use", flush=True)
        t0 = time.perf_counter()
        for w in workloads():
            for carved in (False, True):
                places = []
                times = _rounds(w, args.rounds, args.reps, rng, carved, timer, places)
                how = f"{label}{'_carved' if carved else ''}"
                results.setdefault(w[0], {})[how] = times
                results[w[0]][how + "_places"] = places
                for variant, medians in times.items():
                    print(line(w[0], f"{how} {variant}", medians, args.apart), flush=True)
                for text in places_lines(times["fresh"], places, args.apart):
                    print("  place: " + text, flush=True)
                print("  " + slow_rounds_line(times, args.apart), flush=True)
        print(f"   ({time.perf_counter() - t0:.1f} s)")
        for h in hogs:
            h.stdin.close()
            h.wait()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
