"""Launches of torch.compile's Inductor kernels are counted as Triton launches: Inductor launches
the Triton kernels it generates through CachingAutotuner.run (torch/_inductor/runtime/
triton_heuristics.py), never through JITFunction.run, and the worker wraps that run only when
the candidate imports Inductor's runtime (importing it in every worker would cost every
candidate's start-up). Inductor needs a GPU (or a C++ toolchain on the CPU) to compile, so the
launches here go through stand-ins of the autotuner; the real module is checked for the names
the worker wraps."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import types

from kbx_worker import candidate_mode

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bare_counter():
    counter = candidate_mode.LaunchCounter.__new__(candidate_mode.LaunchCounter)
    counter.count = 0
    return counter


def test_each_run_of_an_autotuner_counts_one_launch():
    launched = []

    class Autotuner:
        def run(self, *args, stream, **kwargs):
            launched.append(args)
            return "done"

    class Debug(Autotuner):  # DebugAutotuner's shape: its own run, which calls the base's
        def run(self, *args, stream, **kwargs):
            return super().run(*args, stream=stream, benchmark_run=True)

    class Other:  # not an autotuner: left alone
        def run(self):
            return "other"

    module = types.ModuleType("standin_heuristics")
    module.CachingAutotuner, module.DebugAutotuner, module.Other = Autotuner, Debug, Other
    counter = _bare_counter()
    counter._wrap_inductor(module)
    assert Autotuner().run(1, 2, stream=0) == "done"
    assert counter.count == 1 and launched == [(1, 2)]
    Debug().run(3, stream=0)  # two runs wrapped, one launch
    assert counter.count == 2
    assert Other().run() == "other" and counter.count == 2


def test_a_launch_counted_inside_the_run_is_not_counted_twice():
    # Under the Triton interpreter Inductor's run launches through fn[grid](...), which the
    # JITFunction wrapper counts already.
    class Jit:
        def run(self, *args, **kwargs):
            return "jit"

    class Autotuner:
        fn = Jit()

        def run(self, *args, stream):
            return self.fn.run(*args)

    counter = _bare_counter()
    counter._wrap(Jit)
    counter._wrap_autotuner(Autotuner)
    assert Autotuner().run(1, stream=0) == "jit"
    assert counter.count == 1


def test_a_failed_run_counts_nothing():
    class Autotuner:
        def run(self, *args, stream):
            raise RuntimeError("out of resources")

    counter = _bare_counter()
    counter._wrap_autotuner(Autotuner)
    try:
        Autotuner().run(stream=0)
    except RuntimeError:
        pass
    assert counter.count == 0


def _python(script, tmp_path):
    """Runs script in a fresh interpreter (nothing of Inductor imported yet, no wrapper left in
    this test process) and returns the JSON it prints last."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), STANDIN=str(tmp_path))
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


STANDIN_HEURISTICS = textwrap.dedent('''
    """Stand-in of Inductor's runtime module: an autotuner whose run is one launch."""
    LAUNCHED = []


    class CachingAutotuner:
        def run(self, *args, stream, **kwargs):
            LAUNCHED.append(args)
            return len(LAUNCHED)
''')


def test_inductor_imported_after_the_counter_started_is_counted(tmp_path):
    # The stand-in takes the real module's name: it is found first on the path of the real
    # package torch._inductor.runtime, so the import goes through the same import machinery.
    (tmp_path / "triton_heuristics.py").write_text(STANDIN_HEURISTICS)
    got = _python('''
        import json, os, sys
        import torch._inductor.runtime as runtime
        runtime.__path__.insert(0, os.environ["STANDIN"])
        from kbx_worker import candidate_mode
        name = candidate_mode.INDUCTOR_MODULE
        counter = candidate_mode.LaunchCounter()
        imported_by_counter = name in sys.modules
        import torch._inductor.runtime.triton_heuristics as th
        standin = th.__file__.startswith(os.environ["STANDIN"])
        tuner = th.CachingAutotuner()
        tuner.run(1, 2, stream=0)
        tuner.run(3, stream=0)
        after_import = counter.count
        late = candidate_mode.LaunchCounter()  # started after the import: wraps at once
        tuner.run(4, stream=0)
        print(json.dumps({"imported_by_counter": imported_by_counter, "standin": standin,
                          "after_import": after_import, "count": counter.count,
                          "late": late.count, "launched": len(th.LAUNCHED),
                          "hook_left": any(type(f).__name__ == "_AfterImport"
                                           for f in sys.meta_path)}))
    ''', tmp_path)
    assert got["standin"]
    assert not got["imported_by_counter"]  # the counter alone does not import Inductor
    assert got["after_import"] == 2
    assert got["count"] == 3 and got["late"] == 1 and got["launched"] == 3
    assert not got["hook_left"]  # the import hook is gone once it wrapped the module


def test_a_failed_import_is_hooked_again_on_the_next_import(tmp_path):
    (tmp_path / "triton_heuristics.py").write_text(
        "import os\nif not os.path.exists(os.environ['STANDIN'] + '/ok'):\n"
        "    raise ImportError('not yet')\n" + STANDIN_HEURISTICS)
    got = _python('''
        import json, os
        import torch._inductor.runtime as runtime
        runtime.__path__.insert(0, os.environ["STANDIN"])
        from kbx_worker import candidate_mode
        counter = candidate_mode.LaunchCounter()
        try:
            import torch._inductor.runtime.triton_heuristics
            first = "imported"
        except ImportError as exc:
            first = str(exc)
        open(os.environ["STANDIN"] + "/ok", "w").close()
        import torch._inductor.runtime.triton_heuristics as th
        th.CachingAutotuner().run(1, stream=0)
        print(json.dumps({"first": first, "count": counter.count}))
    ''', tmp_path)
    assert got == {"first": "not yet", "count": 1}


def test_the_real_inductor_runtime_is_the_one_wrapped(tmp_path):
    # The names the worker wraps exist in the installed torch, and its autotuner's run is
    # wrapped when the module is imported after the counter started.
    got = _python('''
        import json, sys
        from kbx_worker import candidate_mode
        counter = candidate_mode.LaunchCounter()
        before = candidate_mode.INDUCTOR_MODULE in sys.modules
        import importlib
        th = importlib.import_module(candidate_mode.INDUCTOR_MODULE)
        cls = getattr(th, candidate_mode.INDUCTOR_AUTOTUNER)
        print(json.dumps({"before": before, "wrapped": getattr(cls.run, "kbx_counted", False),
                          "file": th.__file__}))
    ''', tmp_path)
    assert not got["before"]
    assert got["wrapped"], got["file"]
