"""Round trip of GPU tensors through .kbt files, pinned-staged and plain, on the local GPU.

Checks every dtype bit for bit at sizes around the staging chunk, then times both paths on a
large tensor. Exits 1 on any mismatch (bench/gpu_session.sh then turns staging off).

    python bench/check_tensorio.py [--dir /dev/shm] [--mb 1024]
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kbx_worker import tensorio  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128]


def _random(numel, dtype):
    raw = torch.randint(0, 256, (numel * torch.empty((), dtype=dtype).element_size(),),
                        dtype=torch.uint8, device="cuda")
    if dtype == torch.bool:
        return raw.remainder(2).bool()
    return raw.view(dtype)


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8).cpu(), b.contiguous().reshape(-1).view(torch.uint8).cpu())


def check(path):
    bad = 0
    chunk = tensorio._Staging.CHUNK
    for dtype in DTYPES:
        size = torch.empty((), dtype=dtype).element_size()
        for nbytes in (4 << 20, chunk - 8, chunk + 8 * 3 + 16, 2 * chunk + 1000 * 16):
            numel = max(1, nbytes // size)
            t = _random(numel, dtype).reshape(numel, 1)[::1]
            named = {"a": t, "b": t.reshape(1, numel).expand(2, numel)}  # one contiguous, one not
            tensorio.write_kbt(path, named)
            back = tensorio.read_kbt(path, "cuda")
            for k in named:
                if not _same(named[k], back[k]):
                    print(f"MISMATCH {dtype} {nbytes} {k}")
                    bad += 1
    return bad


def timed(path, t, staging):
    tensorio.STAGING = staging
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tensorio.write_kbt(path, {"x": t})
    t1 = time.perf_counter()
    tensorio.read_kbt(path, "cuda")
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--mb", type=int, default=1024)
    a = ap.parse_args()
    path = os.path.join(a.dir, f"kbx-check-{os.getpid()}.kbt")
    try:
        bad = check(path)
        print(f"round trips: {'all bit-exact' if not bad else f'{bad} MISMATCHES'}")
        t = _random((a.mb << 20) // 4, torch.float32)
        for staging in (False, True, False, True):
            w, r = timed(path, t, staging)
            print(f"{a.mb} MiB {'pinned-staged' if staging else 'plain'}: write {w:.3f} s "
                  f"({a.mb / 1024 / w:.1f} GiB/s), read {r:.3f} s ({a.mb / 1024 / r:.1f} GiB/s)")
    finally:
        if os.path.exists(path):
            os.remove(path)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
