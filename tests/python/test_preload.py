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
