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
