"""What a confined job's start costs on this machine, step by step (run as root, with the Python
that has torch): fork of a parent that imported torch, each namespace's unshare, the number of
mounts a new mount namespace copies, CUDA's start in a fresh child, alone and in N children at
once (a run's lanes start CUDA side by side: on the H200 a job took a median 2.95 s from its
source check to its import, CUDA's start among it, 12 jobs at a time), and tmpfs writes with and
without huge pages (the job folder's size-capped tmpfs).

    python3 bench/spawn_cost.py [--concurrent 1,4,8,12,16] [--probe .carry/lib/libkbx_probe.so]
"""

import argparse
import ast
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch  # noqa: F401  (the warm parent has it imported)

libc = ctypes.CDLL(None, use_errno=True)
FLAGS = {"mount": 0x00020000, "ipc": 0x08000000, "pid": 0x20000000, "net": 0x40000000,
         "uts": 0x04000000}


def in_child(fn):
    """Runs fn in a forked child; returns (fork-to-child seconds, fn's result)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t_child = time.perf_counter()
        try:
            out = fn()
        except Exception as exc:  # reported, not raised: this is a measurement
            out = f"failed: {exc}"
        os.write(w, repr((t_child - t0, out)).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return ast.literal_eval(data.decode())


def unshare_cost(name):
    def fn():
        t = time.perf_counter()
        ret = libc.unshare(FLAGS[name])
        return time.perf_counter() - t if ret == 0 else f"errno {ctypes.get_errno()}"
    return fn


def cuda_start():
    t = time.perf_counter()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    return time.perf_counter() - t


def concurrent_cuda_starts(n, probe_lib=None):
    """Forks n children of this torch parent, lets them start CUDA at the same moment, and
    returns (each child's CUDA start in seconds, the wall time from the go to the last). With
    probe_lib, each child loads kbx's CUPTI probe at CUDA's start as a candidate's worker does
    (CUDA_INJECTION64_PATH, its records to a file of its own)."""
    go_r, go_w = os.pipe()
    out_r, out_w = os.pipe()
    probe_dir = tempfile.mkdtemp(prefix="kbx_spawn_probe_")  # the children's records
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            os.close(out_r)
            os.read(go_r, 1)  # all wait here until the parent closes its end
            if probe_lib:
                os.environ["CUDA_INJECTION64_PATH"] = probe_lib
                os.environ["KBX_PROBE_FILE"] = os.path.join(probe_dir, f"{os.getpid()}.bin")
            try:
                took = cuda_start()
            except Exception:  # a measurement: a failed start reads as -1
                took = -1.0
            os.write(out_w, f"{took!r}\n".encode())
            os._exit(0)
        pids.append(pid)
    os.close(go_r)
    os.close(out_w)
    t = time.perf_counter()
    os.close(go_w)  # the go: every child's read returns
    data = b""
    while chunk := os.read(out_r, 65536):
        data += chunk
    wall = time.perf_counter() - t
    os.close(out_r)
    for pid in pids:
        os.waitpid(pid, 0)
    shutil.rmtree(probe_dir, ignore_errors=True)
    return [float(x) for x in data.split()], wall


def tmpfs_write(huge):
    d = tempfile.mkdtemp(dir="/dev/shm")
    opts = "size=4g" + (",huge=within_size" if huge else "")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", d]).returncode != 0:
        return "mount failed"
    buf = bytearray(32 << 20)
    times = []
    try:
        for _ in range(5):
            t = time.perf_counter()
            with open(os.path.join(d, "f"), "wb") as f:
                for _ in range(16):
                    f.write(buf)
            times.append(time.perf_counter() - t)
            os.remove(os.path.join(d, "f"))
    finally:
        subprocess.run(["umount", d])
        os.rmdir(d)
    return " ".join(f"{x:.3f}" for x in times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrent", default="1,4,8,12,16",
                    help="children that start CUDA at once, comma-separated (default %(default)s)")
    ap.add_argument("--probe", default=os.environ.get("KBX_PROBE_LIB"),
                    help="libkbx_probe.so: the concurrent starts again with the probe loaded "
                         "(default $KBX_PROBE_LIB)")
    args = ap.parse_args()
    forks = [in_child(lambda: None)[0] for _ in range(5)]
    print(f"fork of a torch parent: median {statistics.median(forks) * 1e3:.1f} ms")
    with open("/proc/self/mountinfo") as f:
        print(f"mounts a new mount namespace copies: {len(f.readlines())}")
    for name in FLAGS:
        costs = [in_child(unshare_cost(name))[1] for _ in range(3)]
        print(f"unshare {name}: " + " ".join(
            f"{c * 1e3:.1f} ms" if isinstance(c, float) else str(c) for c in costs))
    # NVML's answer: torch's default check is a cuInit in this parent, after which its forked
    # children cannot start CUDA (session 32 on the H200: every start failed so)
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    if torch.cuda.is_available():
        took = in_child(cuda_start)[1]
        print("CUDA start in a forked child: " +
              (f"{took:.3f} s" if isinstance(took, float) else str(took)))
        for probe in (None, args.probe) if args.probe else (None,):
            for n in (int(x) for x in args.concurrent.split(",") if x):
                took, wall = concurrent_cuda_starts(n, probe)
                failed = sum(1 for x in took if x < 0)
                ok = sorted(x for x in took if x >= 0) or [float("nan")]
                print(f"CUDA start in {n} forked children at once"
                      f"{' with the probe' if probe else ''}: median "
                      f"{statistics.median(ok):.3f} s, max {ok[-1]:.3f} s, all done {wall:.3f} s "
                      f"after the go" + (f", {failed} failed" if failed else ""))
    else:
        print("CUDA start: no CUDA GPU here")
    print(f"512 MiB into a tmpfs, 5 times (s): plain {tmpfs_write(False)}")
    print(f"512 MiB into a tmpfs, 5 times (s): huge=within_size {tmpfs_write(True)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
