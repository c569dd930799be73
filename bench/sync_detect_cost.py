"""What the timer's check for host waits costs on a GPU (issue 14): each workload called plain,
then under the check as it was until session 35 (torch's sync debug mode 'warn' for the whole
call, every warning recorded) and as it is (the mode off at the first warning), with the answer
of each. The old check made host-bound calls up to 10x slower in the GPU's timing slot
(session 33: solve_symmetric_ldl's n=2048 call 1.76 s against 0.17 s).

    python3 bench/sync_detect_cost.py [--reps 3] [--out f.json]

Needs a CUDA GPU and the repository's python/ on the path. Nothing here is a verdict.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402

from kbx_worker.timer import SYNC_WARNING, _calls_synchronising  # noqa: E402


def check_as_before(fn):
    """The check until session 35: every warning of the call recorded."""
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    return any(SYNC_WARNING in str(w.message) for w in caught)


def workloads(dev):
    """name -> (call, whether it waits on the host)."""
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(2048, 2048, device=dev, generator=g)
    spd = a @ a.T + 2048 * torch.eye(2048, device=dev)
    batch = torch.randn(64, 96, 96, device=dev, generator=g)
    x = torch.randn(1 << 22, device=dev, generator=g)
    small = torch.randn(256, device=dev, generator=g)
    return {
        "matmul_2048": (lambda: a @ a, False),
        "relu_4M": (lambda: torch.relu(x), False),
        "item_loop_2000": (lambda: [small[i % 256].item() for i in range(2000)], True),
        "masked_select_4M": (lambda: torch.masked_select(x, x > 0), True),
        "eig_64x96x96": (lambda: torch.linalg.eig(batch), True),
        "ldl_factor_2048": (lambda: torch.linalg.ldl_factor(spd), True),
        "cholesky_ex_2048": (lambda: torch.linalg.cholesky_ex(spd, check_errors=True), True),
    }


def seconds(fn, reps):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return statistics.median(out), result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="write the rows as JSON here too")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("sync_detect_cost.py: no CUDA GPU here")
    rows = []
    print(f"{'workload':<18} {'plain s':>9} {'before s':>9} {'now s':>9}  "
          "waits(before/now/expected)")
    for name, (fn, expected) in workloads("cuda").items():
        fn()  # warm-up: libraries loaded, kernels chosen
        plain, _ = seconds(fn, args.reps)
        before, seen_before = seconds(lambda: check_as_before(fn), args.reps)
        now, seen_now = seconds(lambda: _calls_synchronising(fn), args.reps)
        rows.append({"workload": name, "plain_s": plain, "before_s": before, "now_s": now,
                     "waits_before": seen_before, "waits_now": seen_now, "expected": expected})
        print(f"{name:<18} {plain:9.4f} {before:9.4f} {now:9.4f}  "
              f"{seen_before}/{seen_now}/{expected}")
    wrong = [r["workload"] for r in rows if r["waits_now"] != r["waits_before"]]
    print("answers differ from the old check: " + (", ".join(wrong) if wrong else "none"))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(rows, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
