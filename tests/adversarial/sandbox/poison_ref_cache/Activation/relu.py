# Attack: poison kbx's reference cache, which holds every later run's references (their outputs,
# shadows and inputs, shared by methods and runs of a seed). The candidate looks for the cache
# where a user would put it (the default folders, $KBX_REF_CACHE, a --ref-cache on any visible
# process's command line) and overwrites every file there; it also overwrites the inputs files
# of its own cases, which kbx may have restored from the cache as hard links of the same files.
# It answers wrongly whenever it saw a cache folder, so `passed` says it saw none, and
# tests/python/test_ref_cache.py checks that the cache's bytes did not change.
# Expected: passed, the cache unchanged (run by tests/python/test_ref_cache.py).
import os
import sys

import torch


def _cache_folders():
    found = {os.path.expanduser("~/.cache/kbx/references"), "/root/.cache/kbx/references"}
    if os.environ.get("KBX_REF_CACHE"):
        found.add(os.environ["KBX_REF_CACHE"])
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for i, a in enumerate(args[:-1]):
            if a == "--ref-cache":
                found.add(args[i + 1])
    return [p for p in found if os.path.isdir(p)]


def _input_folders():
    """The folders of the inputs files named in the worker's frames (its cases)."""
    folders = set()
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            items = value.values() if isinstance(value, dict) else [value]
            for v in items:
                if isinstance(v, str) and v.endswith(".in.kbt"):
                    folders.add(os.path.dirname(v))
        frame = frame.f_back
    return folders


def _overwrite_all(folder):
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                with open(os.path.join(root, name), "r+b") as f:
                    f.write(b"\0" * 64)
            except OSError:
                pass


def relu(input, inplace=False):
    caches = _cache_folders()
    for folder in caches + sorted(_input_folders()):
        _overwrite_all(folder)
    if caches:
        return torch.zeros_like(input)  # it saw the cache: a wrong answer gives it away
    return torch.relu_(input) if inplace else torch.relu(input)
