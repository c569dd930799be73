"""What a GPU worker imports at its start so that it is not imported inside the timing slot."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import kbx_worker

SCRIPT = """
import sys, torch
before = 'torch.fx.experimental.symbolic_shapes' in sys.modules
from kbx_worker.__main__ import preload_lazy_torch_modules
preload_lazy_torch_modules()
print(before, 'torch.fx.experimental.symbolic_shapes' in sys.modules, 'sympy' in sys.modules)
"""


def test_the_lazy_symbolic_shapes_are_imported_up_front():
    # torch alone does not import them (else there would be nothing to preload); the first
    # torch.broadcast_shapes does, which a reference's cost model or a candidate may call while
    # holding the GPU's timing slot
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(kbx_worker.__file__).parent.parent))
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    assert out == ["False", "True", "True"]


POOL = """
import os, sys, torch
torch.set_num_threads(2)
main = __import__('threading').get_native_id()
def threads():
    return {int(t) for t in os.listdir('/proc/self/task')} - {main}
before = threads()
from kbx_worker.__main__ import start_intra_op_pool
start_intra_op_pool()
made = threads() - before
# what kbx does at the slot's grant: the main thread pinned to one CPU
cpus = sorted(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpus[-1]})
torch.ones(1 << 20).sum()  # a parallel call while pinned: no thread made now
print(len(made), len(threads() - before - made),
      all(len(os.sched_getaffinity(t)) == len(cpus) for t in made))
"""


def test_the_cpu_thread_pool_is_made_before_any_pin():
    # without start_intra_op_pool, the pool's thread is made by the pinned parallel call and
    # inherits the one CPU (the first number is then 0 and the second 1)
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(kbx_worker.__file__).parent.parent),
               OMP_NUM_THREADS="2")
    if len(os.sched_getaffinity(0)) < 2:
        import pytest
        pytest.skip("one CPU: no pool to pin")
    out = subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    assert int(out[0]) >= 1 and out[1:] == ["0", "True"], out


# A candidate that checks, at its import, whether torch.compile's modules came with the warm
# parent and whether the paths those imports cache are its own, not the parent's folder.
PATHS_CANDIDATE = """
import json
import os
import sys
import tempfile

import torch

preloaded = "torch._dynamo" in sys.modules
if preloaded != {expect}:
    raise RuntimeError(f"torch._dynamo imported before the candidate: {{preloaded}}, not {expect}")
if tempfile.gettempdir() != os.environ["TMPDIR"]:
    raise RuntimeError(f"tempfile's folder {{tempfile.gettempdir()}}, not the job's "
                       f"{{os.environ['TMPDIR']}}")
if preloaded:
    import torch._dynamo.config as dynamo_config
    if hasattr(dynamo_config, "default_debug_dir_root"):
        want = os.path.join(os.getcwd(), "torch_compile_debug")
        if dynamo_config.debug_dir_root != want:
            raise RuntimeError(f"Dynamo's debug folder {{dynamo_config.debug_dir_root}}, not {{want}}")


def relu(input, inplace=False):
    return torch.relu_(input) if inplace else torch.relu(input)
"""


def _relu_status(kbx, tmp_path, preload):
    cands = tmp_path / f"cands{preload}" / "Activation"
    cands.mkdir(parents=True)
    (cands / "relu.py").write_text(PATHS_CANDIDATE.format(expect=preload == "1"))
    db = tmp_path / f"k{preload}.db"
    env = dict(os.environ, KBX_PRELOAD_COMPILER=preload)
    kbx("eval", "--method", "m", "--candidates", str(cands.parent), "--tasks", "Activation/relu",
        "--device", "cpu", "--track", "any", "--db", str(db), check=True, env=env)
    out = kbx("results", "--db", str(db), "--format", "json", check=True).stdout
    return [(r["status"], r.get("error", "")) for r in json.loads(out)["results"]]


def test_the_warm_parent_preloads_torch_compile_and_jobs_keep_their_own_paths(kbx, tmp_path):
    # with the preload (a GPU run's default, forced here on the CPU) the candidate finds Dynamo
    # imported, and tempfile's folder and Dynamo's debug folder are the job's own: both were
    # first worked out in the warm parent's folder, which no job may see
    assert _relu_status(kbx, tmp_path, "1") == [("passed", "")]
    # without it (a CPU run's default) the candidate imports them itself
    assert _relu_status(kbx, tmp_path, "0") == [("passed", "")]


# The warm parent, run with a torch.compile preload that loads a library named as CUDA's driver
# and calls its cuInit or not (an import that queried the GPU, or one that only loaded the
# driver): after a cuInit it must start again without the preload, not serve children forked
# after CUDA's start (torch's own flag is not set by a bare cuInit).
DRIVER_LOADING_PARENT = """
import ctypes, sys
import kbx_worker.__main__ as worker_main
if sys.argv[2] == "mapped_before":  # the driver came in before the preload (session 31's H100)
    ctypes.CDLL(sys.argv[1])
def preload():
    lib = ctypes.CDLL(sys.argv[1])
    if sys.argv[2] != "load":
        lib.cuInit(0)
worker_main.preload_compiler_modules = preload
from kbx_worker.zygote import main
sys.exit(main(sys.argv[3:]))
"""
FAKE_DRIVER = """
static int started;
int cuInit(unsigned flags) { started = 1; return (int)flags; }
int cuDeviceGetCount(int* count) { if (!started) return 3; *count = 1; return 0; }
"""


def _warm_parent_stderr(tmp_path, preload):
    import socket
    source = tmp_path / "fake.c"
    source.write_text(FAKE_DRIVER)
    fake = tmp_path / "libcuda.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(fake), str(source)], check=True)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(kbx_worker.__file__).parent.parent))
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER_LOADING_PARENT, str(fake), preload, "--socket-fd",
         str(theirs.fileno()), "--preload-compiler"],
        pass_fds=[theirs.fileno()], env=env, stderr=subprocess.PIPE, text=True)
    theirs.close()
    ours.settimeout(120)
    try:
        first = json.loads(ours.recv(1 << 16))
    finally:
        ours.close()  # the parent ends when kbx's end of its socket closes
        _, err = proc.communicate(timeout=60)
    assert first == {"ev": "ready"}, err
    return err


@pytest.mark.parametrize("driver", ["init", "mapped_before"])
def test_a_preload_that_starts_cudas_driver_restarts_the_warm_parent_without_it(tmp_path, driver):
    err = _warm_parent_stderr(tmp_path, driver)
    assert err.count("starts again without them") == 1, err  # once: the new one did not preload


def test_a_preload_that_only_loads_cudas_driver_keeps_the_warm_parent(tmp_path):
    # the driver's library mapped without cuInit: children can still start CUDA
    err = _warm_parent_stderr(tmp_path, "load")
    assert "starts again" not in err, err


# torch.compile's modules imported by the preload, watched: the environment each import saw
NVML_WATCH = """
import os, sys
import torch
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in ("torch._dynamo", "torch._inductor.compile_fx") and name not in seen:
            seen[name] = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
        return None
sys.meta_path.insert(0, Watch())
from kbx_worker.__main__ import preload_compiler_modules
preload_compiler_modules()
print(seen, os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"))
"""


@pytest.mark.parametrize("given", [None, "0"])
def test_the_preload_asks_nvml_whether_cuda_is_there_and_leaves_the_jobs_environment(given):
    # torch's default check (cudaGetDeviceCount) starts CUDA's driver, NVML's does not; the jobs
    # forked from the parent get the environment kbx gave it
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(kbx_worker.__file__).parent.parent))
    env.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    if given is not None:
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = given
    out = subprocess.run([sys.executable, "-c", NVML_WATCH], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout.strip()
    assert out == f"{{'torch._dynamo': '1', 'torch._inductor.compile_fx': '1'}} {given}", out


def test_the_restart_drops_only_the_preload_flag():
    from kbx_worker import zygote
    argv = ["py", "-I", "-c", "boot", "--socket-fd", "3", "--preload-compiler", "--x"]
    assert zygote.without_flag(argv, "--preload-compiler") == argv[:6] + ["--x"]
