#!/usr/bin/env python3
"""GPU check of libkbx_probe.so, to run on a machine with a GPU, torch and triton:

    python3 probe/tools/gpu_check.py --lib build-probe/libkbx_probe.so [--save trace.bin]

It plays the supervisor: it starts a worker process with CUDA_INJECTION64_PATH and KBX_PROBE_FD
(a pipe it reads), the worker times three calls the way kbx's worker does (push, launch,
synchronize, pop, flush) and this script checks what came through the pipe:

  call 1  a Triton kernel on the default and on a side stream, a cuBLAS matmul, and a kernel
          launched from another thread while the call runs (must stay unattributed)
  call 2  Triton kernels and a device-to-host copy
  call 3  a CUDA graph replay of the Triton kernel
  also    a child process that inherits the environment must not write into the stream; the
          exit flush must arrive; kbx_probe_flush's counts must match the records received.

It prints one line per check and exits 1 if any fails. --save keeps the raw stream (for
kbx_probe_dump or as a fixture); --overhead also times a ~50 us kernel with CUDA events with and
without the probe.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import probe_wire  # noqa: E402

WORKER = r"""
import ctypes, os, subprocess, sys, threading, time
os.environ["KBX_PROBE_PID"] = str(os.getpid())   # set before CUDA starts, as a forked worker does
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def add(x, y, out):
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)

torch.cuda.init()
lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
lib.kbx_probe_push.argtypes = [ctypes.c_ulonglong]
print("active", lib.kbx_probe_active(), flush=True)
n = 1 << 22
x, y, out, out2 = (torch.randn(n, device="cuda") for _ in range(4))
a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
add(x, y, out); a @ a; torch.cuda.synchronize()          # compile and warm up outside any call
counts = [lib.kbx_probe_flush()]

side = torch.cuda.Stream()
started, stop = threading.Event(), threading.Event()
def other_thread():
    z = torch.empty_like(x)
    started.set()
    while not stop.is_set():
        torch.mul(x, 2.0, out=z)
        torch.cuda.synchronize()
t = threading.Thread(target=other_thread); t.start(); started.wait()

lib.kbx_probe_push(1)
add(x, y, out)
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    add(x, y, out2)
torch.cuda.current_stream().wait_stream(side)
a @ a
torch.cuda.synchronize()
time.sleep(0.01)                                            # the other thread launches meanwhile
lib.kbx_probe_pop()
stop.set(); t.join()
torch.cuda.synchronize()
counts.append(lib.kbx_probe_flush())

lib.kbx_probe_push(2)
for _ in range(3):
    add(x, y, out)
host = out[:1024].cpu()
lib.kbx_probe_pop()
torch.cuda.synchronize()
counts.append(lib.kbx_probe_flush())

g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    add(x, y, out)                                          # warm-up on the capture stream
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        add(x, y, out)
torch.cuda.synchronize()
lib.kbx_probe_flush()
lib.kbx_probe_push(3)
g.replay()
lib.kbx_probe_pop()
torch.cuda.synchronize()
counts.append(lib.kbx_probe_flush())

child = subprocess.run([sys.executable, "-c",
                        "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); print('ok')"],
                       capture_output=True, text=True)
print("child", child.returncode, child.stdout.strip(), flush=True)
print("counts", *counts, flush=True)
"""

BENCH = r"""
import os, statistics, torch
a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
for _ in range(20): a @ a
times = []
for _ in range(300):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ a; e.record(); e.synchronize()
    times.append(s.elapsed_time(e) * 1000)
print(statistics.median(times))
"""


def run_worker(lib: pathlib.Path, code: str, with_probe: bool = True):
    """Runs `code` in a worker; returns (stdout, stderr, returncode, probe stream bytes)."""
    env = dict(os.environ)
    read_fd, write_fd = os.pipe()
    if with_probe:
        env.update(CUDA_INJECTION64_PATH=str(lib), KBX_PROBE_FD=str(write_fd))
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "worker.py"               # @triton.jit needs a source file
        script.write_text(code)
        proc = subprocess.Popen([sys.executable, str(script)], env=env, pass_fds=(write_fd,),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.close(write_fd)                                  # EOF once the worker exits
        chunks = []
        reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_fd, 65536), b"")))
        reader.start()
        out, err = proc.communicate(timeout=300)
        reader.join()
        os.close(read_fd)
    return out, err, proc.returncode, b"".join(chunks), proc.pid


def overlaps(r, window):
    return r.start_ns < window[1] and r.end_ns > window[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, type=pathlib.Path)
    ap.add_argument("--save", type=pathlib.Path)
    ap.add_argument("--overhead", action="store_true")
    args = ap.parse_args()
    lib = args.lib.resolve()

    out, err, rc, stream, pid = run_worker(lib, WORKER)
    print(out, end="")
    if err.strip():
        print("worker stderr:\n" + err, file=sys.stderr)
    if args.save:
        args.save.write_bytes(stream)
    failures = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    check(rc == 0, f"worker exit status {rc}")
    check("active 1" in out, "kbx_probe_active() == 1 in the worker")
    try:
        header, records = probe_wire.decode(stream)
    except ValueError as e:
        check(False, f"the probe stream parses: {e}")
        return 1
    check(header["pid"] == pid, f"header pid {header['pid']} is the worker's {pid}")
    check(stream.count(probe_wire.MAGIC) == 1, "one header: the grandchild did not write")
    check("child 0 ok" in out, "a child process with the inherited environment runs")

    kernels = [r for r in records if r.kind == "kernel"]
    by_id = {i: [r for r in records if r.external_id == i and r.kind in ("kernel", "memcpy", "memset")]
             for i in (1, 2, 3)}
    c1 = by_id[1]
    adds = [r for r in c1 if r.name.startswith("add_kernel")]
    check(len(adds) == 2 and len({r.stream_id for r in adds}) == 2,
          f"call 1: add_kernel on two streams ({[(r.name, r.stream_id) for r in adds]})")
    lib_kernels = [r for r in c1 if not r.name.startswith("add_kernel") and r.kind == "kernel"]
    check(len(lib_kernels) >= 1, f"call 1: the matmul's library kernel(s) tagged: {[r.name[:60] for r in lib_kernels]}")
    push1 = next(r for r in records if r.kind == "push" and r.external_id == 1)
    pop1 = next(r for r in records if r.kind == "pop" and r.external_id == 1)
    window1 = (push1.start_ns, max([pop1.start_ns] + [r.end_ns for r in c1]))
    others = [r for r in kernels if r.external_id == 0 and overlaps(r, window1)]
    check(len(others) >= 1, f"call 1: the other thread's kernels stay unattributed ({len(others)} in the window)")
    check(not any("elementwise" in r.name for r in c1),
          "call 1: none of the other thread's elementwise (mul) kernels carries id 1")
    c2 = by_id[2]
    check(sum(r.name.startswith("add_kernel") for r in c2) == 3, "call 2: three add_kernel launches tagged")
    check(any(r.kind == "memcpy" and r.detail == 2 for r in c2), "call 2: the device-to-host copy tagged")
    graph = [r for r in kernels if r.flags & probe_wire.GRAPH_LAUNCHED]
    print(f"info call 3: graph-launched kernels {[(r.name, r.external_id) for r in graph]} "
          "(tagged with 3 if external ids reach graph replays)")
    flushes = [r for r in records if r.kind == "flush"]
    check([r.detail for r in flushes] == list(range(1, len(flushes) + 1)), "flush sequence numbers 1..n")
    check(bool(flushes) and flushes[-1].flags & probe_wire.EXIT_FLUSH, "the exit flush arrived last")
    check(all(r.bytes == 0 for r in flushes), f"no records dropped ({[r.bytes for r in flushes]})")
    counts = [int(v) for line in out.splitlines() if line.startswith("counts") for v in line.split()[1:]]
    print(f"info kbx_probe_flush returned {counts}; records between flush markers "
          f"{segment_sizes(records)}")
    errors = [r.name for r in records if r.kind == "error"]
    check(not errors, f"no Error records {errors}")
    untimed = [r for r in records if r.flags & probe_wire.NO_TIMESTAMP]
    check(not untimed, f"every activity record has timestamps ({len(untimed)} without)")

    if args.overhead:
        base = float(run_worker(lib, BENCH, with_probe=False)[0])
        probed = float(run_worker(lib, BENCH)[0])
        print(f"info 2048^2 fp16 matmul, CUDA events, median of 300: {base:.2f} us without the probe, "
              f"{probed:.2f} us with it ({(probed / base - 1) * 100:+.2f}%)")
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


def segment_sizes(records):
    sizes, n = [], 0
    for r in records:
        n += 1
        if r.kind == "flush":
            sizes.append(n)
            n = 0
    return sizes


if __name__ == "__main__":
    sys.exit(main())
