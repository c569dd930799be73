"""Does a memory-bound call's speed follow where its output lies relative to its inputs?

Session 38 on an H100: the same torch call (relu on 64M fp16, sub and div on 64M bf16, a 16M
float32 multiply-subtract) ran 13-17% slower in one worker than in another, steady within each
(20 samples within 2%), and which task drew the slow state changed from run to run; Math/sub's
perf_f32_64M had batches in both states within one timing (0.265 and 0.311 ms). One guess: the
relative placement of the input and output buffers in the GPU's memory (which the caching
allocator's history decides, so each process draws its own).

This script carves inputs and an output out of one allocation at chosen offsets, times each
call at every offset (CUDA events, the median of REPS back-to-back calls after a warm-up), and
prints the spread: if the slowest offset is about 15% behind the fastest, placement is the cause
and a timer that moves its outputs between batches would time every state, not one.

Then (--processes N) it starts N fresh processes that each allocate GPU memory of random sizes
first (a worker's history: its cases' inputs, outputs and shadows), then time the same calls as
a worker does (a new output each call, freed before the next): the spread of their medians is
the process-to-process difference kbx saw, outside kbx.

    python3 bench/placement_gpu.py [--reps 20] [--offsets 48] [--processes 8] [--out f.json]
"""

import argparse
import json
import random
import statistics
import subprocess
import sys

import torch

MIB = 1 << 20


def time_median(fn, reps):
    """The median ms of reps calls of fn, each between its own CUDA events, after five untimed."""
    for _ in range(5):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def workloads():
    """(name, dtype, elements, inputs, the call writing into out)."""
    return [
        ("relu_f16_64M", torch.float16, 64 * MIB, 1, lambda a, out: torch.clamp_min(a[0], 0, out=out)),
        ("sub_bf16_64M", torch.bfloat16, 64 * MIB, 2, lambda a, out: torch.sub(a[0], a[1], out=out)),
        ("mul_f32_16M", torch.float32, 16 * MIB, 2, lambda a, out: torch.mul(a[0], a[1], out=out)),
        ("add_f32_64M", torch.float32, 64 * MIB, 2, lambda a, out: torch.add(a[0], a[1], out=out)),
    ]


def _sweep(name, dtype, n, n_in, call, offsets, reps):
    """Times call at each offset (bytes) of the output behind the inputs in one allocation."""
    item = torch.empty((), dtype=dtype).element_size()
    span = n * item
    top = max(offsets)
    buf = torch.empty((n_in + 1) * span + top, dtype=torch.uint8, device="cuda")
    ins = [buf[i * span:(i + 1) * span].view(dtype) for i in range(n_in)]
    for t in ins:
        t.uniform_(-1, 1)
    rows = []
    for off in offsets:
        lo = n_in * span + off
        out = buf[lo:lo + span].view(dtype)
        rows.append((off, time_median(lambda: call(ins, out), reps)))
    # torch's own allocations, as a worker gets them: a fresh output per call
    own = time_median(lambda: call(ins, torch.empty_like(ins[0])), reps)
    del buf, ins
    torch.cuda.empty_cache()
    times = [ms for _, ms in rows]
    fast, slow = min(times), max(times)
    print(f"{name}: fastest {fast:.4f} ms, slowest {slow:.4f} ms ({(slow / fast - 1) * 100:.1f}% "
          f"slower), median {statistics.median(times):.4f}; a fresh output per call {own:.4f} ms")
    slow_offsets = [off // 1024 for off, ms in rows if ms > fast * 1.05]
    print(f"  offsets (KiB) over 5% behind the fastest: {len(slow_offsets)} of {len(rows)}: "
          f"{slow_offsets[:24]}")
    return {"name": name, "rows": rows, "fresh_output_ms": own}


def _one_process(seed, reps):
    """In a fresh process: GPU allocations of random sizes kept alive, then each workload's
    median with a new output per call; prints one JSON line."""
    rng = random.Random(seed)
    history = [torch.empty(rng.randrange(1, 512) * MIB, dtype=torch.uint8, device="cuda")
               for _ in range(rng.randrange(0, 8))]
    row = {"seed": seed, "history_mib": sum(t.numel() for t in history) // MIB}
    for name, dtype, n, n_in, call in workloads():
        ins = [torch.empty(n, dtype=dtype, device="cuda").uniform_(-1, 1) for _ in range(n_in)]
        row[name] = time_median(lambda: call(ins, torch.empty_like(ins[0])), reps)
        del ins
    print(json.dumps(row), flush=True)


def _processes(count, reps):
    """count fresh processes (_one_process), each with its own allocation history: the spread
    of each workload's medians across them."""
    rows = []
    for seed in range(count):
        out = subprocess.run([sys.executable, __file__, "--one-process", str(seed),
                              "--reps", str(reps)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for name, *_ in workloads():
        ms = [r[name] for r in rows]
        print(f"{name} over {count} processes: fastest {min(ms):.4f} ms, slowest {max(ms):.4f} ms "
              f"({(max(ms) / min(ms) - 1) * 100:.1f}% slower); each: "
              + ", ".join(f"{m:.4f}" for m in ms))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--offsets", type=int, default=48, help="offsets tried, 64 KiB apart, then "
                    "as many 2 MiB apart")
    ap.add_argument("--processes", type=int, default=8, help="fresh processes, each with its own "
                    "allocation history (0: none)")
    ap.add_argument("--one-process", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help="write every timing as JSON here")
    args = ap.parse_args()
    if args.one_process is not None:
        _one_process(args.one_process, args.reps)
        return
    offsets = sorted({k * 64 * 1024 for k in range(args.offsets)} |
                     {k * 2 * MIB for k in range(args.offsets)})
    print(torch.cuda.get_device_name(), torch.__version__)
    results = {"offsets": [_sweep(*w, offsets, args.reps) for w in workloads()]}
    torch.cuda.empty_cache()
    results["processes"] = _processes(args.processes, args.reps) if args.processes > 0 else []
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
