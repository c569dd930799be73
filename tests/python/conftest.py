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


# Under pytest-xdist (make test-python: `-n $(PYTEST_WORKERS) --dist loadgroup`) each test is a unit of work of
# its own, except the tests of a module in GROUPED: a module-scoped fixture of theirs does the
# work, so they stay on one worker and it runs once. xdist's own loadgroup keys its groups on a
# suffix of the node id that pytest 9 no longer shows it (every xdist_group was ignored, and
# test_planted's evaluations ran once on every worker), so the scheduler below groups by module
# itself. The longest tests go first, in SLOWEST's order, and xdist keeps that order (not its
# default, the largest groups first), so no worker starts a long test last.
GROUPED = {"test_planted", "test_report", "test_verdict_levels"}
SLOWEST = ("test_kill_minus_9_at_random_moments_then_resume", "test_planted")


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: run with no other test at the same time (make "
                            "test-python runs these after the others, without xdist)")
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist 3.6 and later
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: unknown without it
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return module if pathlib.Path(module).stem in GROUPED else nodeid

    return ModuleGroups(config, log)


def _module_scoped_fixture(item):
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope == "module"
                                    for defs in info.name2fixturedefs.values())


def pytest_collection_modifyitems(config, items):
    def rank(item):
        for i, name in enumerate(SLOWEST):
            if item.name == name or item.module.__name__ == name:
                return i
        return len(SLOWEST)

    items.sort(key=rank)  # stable: the order within a module stays
    ungrouped = sorted({item.module.__name__ for item in items if _module_scoped_fixture(item)}
                       - GROUPED)
    if ungrouped and hasattr(config, "workerinput"):  # an xdist worker
        raise pytest.UsageError(f"{', '.join(ungrouped)}: a module-scoped fixture, but not in "
                                "conftest.py's GROUPED (under xdist it would run on every worker)")
