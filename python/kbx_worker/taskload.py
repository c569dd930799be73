"""Loading a task's reference.py and a candidate's module from files."""

import importlib.util
import sys


def load_module(path, name):
    """Import a Python file as a fresh module named name."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Reference:
    """A task's reference module: entry function, cases, optional cost and shadow functions."""

    def __init__(self, task_dir, entry, label="ref"):
        self.module = load_module(f"{task_dir}/reference.py", f"kbx_ref_{label}")
        if not hasattr(self.module, entry):
            raise AttributeError(f"{task_dir}/reference.py defines no function {entry}()")
        self.entry = getattr(self.module, entry)
        self.cases = list(self.module.cases())
        self.cost = getattr(self.module, "cost", None)
        self.shadow = getattr(self.module, "shadow", None)
