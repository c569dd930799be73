import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
# Each test computes its own references: a cache shared between tests (same task and --seed)
# would let one test's references stand in another's. test_ref_cache.py names its own folder.
os.environ["KBX_REF_CACHE"] = "off"


def kbx_binary():
    return os.environ.get("KBX_BIN", str(ROOT / "build" / "kbx"))


@pytest.fixture(scope="session")
def kbx():
    path = kbx_binary()
    if not os.path.exists(path):
        pytest.fail(f"kbx binary not found at {path}; build first (make build) or set KBX_BIN")

    def run(*args, check=False, timeout=900, **kw):
        proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout,
                              cwd=kw.pop("cwd", ROOT), **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"kbx {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    return run


# Under pytest-xdist (make test-python: `-n 3 --dist loadgroup`) a module's tests stay together on
# one worker, so its module-scoped fixtures run once, except in SPLIT, whose tests are long and
# stand alone. The longest tests go first, so no worker starts one of them last.
SPLIT = {"test_supervisor"}
FIRST = ("test_kill_minus_9_at_random_moments_then_resume", "test_planted")


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: run with no other test at the same time (make "
                            "test-python runs these after the others, without xdist)")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        for i, name in enumerate(FIRST):
            if item.name == name or item.module.__name__ == name:
                return i
        return len(FIRST)

    items.sort(key=rank)  # stable: the order within a module stays
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.module.__name__ not in SPLIT:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
