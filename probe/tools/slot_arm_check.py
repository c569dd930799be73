#!/usr/bin/env python3
"""GPU check of the probe's timing-slot request (`kbx eval --slot-at launch`), to run on a
machine with a GPU, torch and triton:

    python3 probe/tools/slot_arm_check.py --lib .carry/lib/libkbx_probe.so

It plays the supervisor's side of the slot: a worker process (CUDA_INJECTION64_PATH, the probe
writing its records to a file) arms the probe with kbx_probe_slot_arm on two pipes this script
holds; at the first GPU work the probe must write a "slot_wanted" line and wait until this
script answers "go" (after HOLD_S). Each step prints one line; exit 1 if any check fails:

  triton    a Triton kernel's first call (JIT compile, then cuLaunchKernel): the compile runs
            before the request, the launch waits for "go"
  eager     a torch op (cudaLaunchKernel, the runtime API)
  copy      a device-to-device copy
  cublas    a cuBLAS matmul (the library's own launches)
  compiled  torch.compile's first call: Dynamo, Inductor and Triton compile before the request
  none      an armed span without GPU work: no request, disarm returns 0
  overhead  10000 tiny launches before any arm and after a disarm (the callbacks are off then)
  closed    the request pipe closed instead of "go": the worker exits with 3
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HOLD_S = 0.5

WORKER = r"""
import ctypes, json, os, sys, time
os.environ["KBX_PROBE_PID"] = str(os.getpid())
import torch, triton, triton.language as tl

req_fd, ev_fd = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.init()
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
lib.kbx_probe_slot_arm.argtypes = [ctypes.c_int, ctypes.c_int]

def say(**kw):
    print(json.dumps(kw), flush=True)

@triton.jit
def inc(p, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(p + o, tl.load(p + o, mask=o < n) + 1, mask=o < n)

def tiny_launches(n=10000):
    y = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        y.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6

say(step="active", value=lib.kbx_probe_active())
say(step="overhead_before", us=tiny_launches())

def armed(name, body):
    armed_ok = lib.kbx_probe_slot_arm(req_fd, ev_fd)
    t0 = time.perf_counter()
    body()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    say(step=name, armed=armed_ok, seconds=seconds, taken=lib.kbx_probe_slot_disarm(),
        t_end=time.time())

armed("triton", lambda: inc[(x.numel() // 1024,)](x, x.numel(), BLOCK=1024))
armed("eager", lambda: x.mul_(1.0))
armed("copy", lambda: x.clone())
m = torch.randn(512, 512, device="cuda")
torch.cuda.synchronize()
armed("cublas", lambda: m @ m)
f = torch.compile(lambda a: torch.sin(a) * 2 + torch.cos(a))
armed("compiled", lambda: f(x))
armed("none", lambda: sum(range(100000)))
say(step="overhead_after", us=tiny_launches())
say(step="closing")
armed("closed", lambda: x.add_(1))
say(step="survived_close")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="libkbx_probe.so")
    parser.add_argument("--python", default=sys.executable)
    opts = parser.parse_args()
    req_r, req_w = os.pipe()
    ev_r, ev_w = os.pipe()
    records = tempfile.NamedTemporaryFile(prefix="kbx_slot_check_", suffix=".bin", delete=False)
    env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.abspath(opts.lib),
               KBX_PROBE_FILE=records.name)
    # a file, not `python -c`: triton.jit reads its function's source from the file it is in
    script = tempfile.NamedTemporaryFile("w", prefix="kbx_slot_check_", suffix=".py",
                                         delete=False)
    script.write(WORKER)
    script.close()
    worker = subprocess.Popen([opts.python, script.name, str(req_r), str(ev_w)], env=env,
                              pass_fds=(req_r, ev_w), stdout=subprocess.PIPE, text=True)
    os.close(req_r)
    os.close(ev_w)
    wanted = []  # (time, parsed line)
    closing = threading.Event()

    def supervise():
        with os.fdopen(ev_r, "r") as events:
            for line in events:
                wanted.append((time.time(), json.loads(line)))
                time.sleep(HOLD_S)  # the worker's "closing" line is read meanwhile
                if closing.is_set():
                    os.close(req_w)
                    return
                os.write(req_w, b"go\n")

    threading.Thread(target=supervise, daemon=True).start()
    steps = {}
    for line in worker.stdout:
        step = json.loads(line)
        steps[step["step"]] = step
        if step["step"] == "closing":
            closing.set()
    rc = worker.wait(timeout=600)
    os.unlink(records.name)
    os.unlink(script.name)

    failures = 0

    def check(ok, what):
        nonlocal failures
        failures += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + what)

    check(steps.get("active", {}).get("value") == 1, "the probe records (kbx_probe_active)")
    apis = [w[1].get("api", "") for w in wanted]
    print("slot_wanted lines:", json.dumps([w[1] for w in wanted]))
    asking = ("triton", "eager", "copy", "cublas", "compiled")  # in the order they ran
    for name in asking:
        s = steps.get(name, {})
        check(s.get("armed") == 1 and s.get("taken") == 1 and s.get("seconds", 0) >= HOLD_S,
              f"{name}: armed, asked, waited for go ({s.get('seconds', 0):.3f} s)")
    one_each = len(wanted) == len(asking) + 1  # and the closed step's
    check(one_each and all(w[1].get("ev") == "slot_wanted" and w[1].get("at") == "launch"
                           for w in wanted), f"one slot_wanted per GPU span: {apis}")
    if len(wanted) >= len(asking):
        check(apis[0].startswith("cuLaunch"), f"triton: asked at a driver launch ({apis[0]})")
        print("asked at: " + ", ".join(f"{n} {a}" for n, a in zip(asking, apis)))
        compiled = steps.get("compiled", {})
        # the request came after the compile: the time from the request to the call's end is
        # HOLD_S plus the kernels, far less than the whole call when compiling took seconds
        at = wanted[asking.index("compiled")][0]
        before_request = compiled.get("seconds", 0) - (compiled.get("t_end", 0) - at)
        print(f"compiled: {before_request:.2f} s of the first call ran before the request")
        check(before_request > 0.2, "compiled: the compile ran before the request")
    s = steps.get("none", {})
    check(s.get("armed") == 1 and s.get("taken") == 0, "none: no GPU work, nothing asked")
    before = steps.get("overhead_before", {}).get("us", 0)
    after = steps.get("overhead_after", {}).get("us", 0)
    print(f"overhead: {before:.2f} us per launch before any arm, {after:.2f} us after disarm")
    check(after <= before * 1.2 + 0.5, "no launch overhead left after disarm")
    check(rc == 3 and "survived_close" not in steps,
          f"closed pipe: the worker exited with 3 (got {rc})")
    print("FAILED" if failures else "PASS", f"({failures} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
