"""What a GPU worker imports at its start so that it is not imported inside the timing slot."""

import os
import pathlib
import subprocess
import sys

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
