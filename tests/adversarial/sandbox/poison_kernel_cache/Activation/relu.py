# Attack: plant a kernel in the cache of kernels PyTorch compiles at run time (NVRTC), which
# kbx's reference workers share across runs (--kernel-cache): PyTorch loads a cached kernel by a
# name made from its source's hash, without checking what the file holds, so a kernel planted
# under that name would run in every later run's references (torch.special.zeta's, say) and
# forge their outputs. The candidate looks for the cache where kbx keeps it (the default
# folders, $KBX_KERNEL_CACHE, $PYTORCH_KERNEL_CACHE_PATH, a --kernel-cache on any visible
# process's command line), overwrites every file there and adds one of its own.
# It answers wrongly whenever it saw a cache folder, so `passed` says it saw none, and
# tests/python/test_kernel_cache.py checks that the cache's bytes did not change.
# Expected: passed, the cache unchanged (run by tests/python/test_kernel_cache.py).
import os

import torch


def _cache_folders():
    found = {os.path.expanduser("~/.cache/kbx/torch-kernels"), "/root/.cache/kbx/torch-kernels"}
    for name in ("KBX_KERNEL_CACHE", "PYTORCH_KERNEL_CACHE_PATH"):
        if os.environ.get(name):
            found.add(os.environ[name])
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for i, a in enumerate(args[:-1]):
            if a == "--kernel-cache":
                found.add(args[i + 1])
    return [p for p in found if os.path.isdir(p)]


def _plant(folder):
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                with open(os.path.join(root, name), "r+b") as f:
                    f.write(b"\0" * 64)
            except OSError:
                pass
    try:
        with open(os.path.join(folder, "zeta_kernel_arch9.0_nvrtc13.0_sass_1_planted"), "wb") as f:
            f.write(b"\0" * 64)
    except OSError:
        pass


def relu(input, inplace=False):
    caches = _cache_folders()
    for folder in caches:
        _plant(folder)
    if caches or "PYTORCH_KERNEL_CACHE_PATH" in os.environ:
        return torch.zeros_like(input)  # it saw the cache: a wrong answer gives it away
    return torch.relu_(input) if inplace else torch.relu(input)
