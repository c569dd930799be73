"""Turning call arguments and results into JSON plus named tensors, and back.

Tensors are replaced by {"__tensor__": name}; tuples by {"__tuple__": [...]}; torch dtypes by
{"__dtype__": "float32"}; non-finite floats by {"__float__": "inf"}. Names are paths such as
"arg0", "arg1.2" or "kw.out" so the supervisor can match inputs across files.
"""

import math

import torch

from .tensorio import NAME_TO_DTYPE, dtype_name


def encode(value, name, tensors):
    """Return the JSON form of value; tensors found are added to the tensors dict."""
    if isinstance(value, torch.Tensor):
        tensors[name] = value
        return {"__tensor__": name}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, torch.dtype):
        return {"__dtype__": dtype_name(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, f"{name}.{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{name}.{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {"__dict__": {k: encode(v, f"{name}.{k}", tensors) for k, v in value.items()}}
    raise TypeError(f"cannot pass a value of type {type(value).__name__} ({name})")


def decode(obj, tensors):
    """Inverse of encode, taking tensors by name from the tensors dict."""
    if isinstance(obj, list):
        return [decode(v, tensors) for v in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__tuple__" in obj:
            return tuple(decode(v, tensors) for v in obj["__tuple__"])
        if "__dtype__" in obj:
            return NAME_TO_DTYPE[obj["__dtype__"]]
        if "__float__" in obj:
            return float(obj["__float__"])
        if "__dict__" in obj:
            return {k: decode(v, tensors) for k, v in obj["__dict__"].items()}
    return obj


def encode_call(args, kwargs):
    """JSON form and tensors of a call's arguments."""
    tensors = {}
    enc = {
        "args": [encode(a, f"arg{i}", tensors) for i, a in enumerate(args)],
        "kwargs": {k: encode(v, f"kw.{k}", tensors) for k, v in kwargs.items()},
    }
    return enc, tensors


def decode_call(enc, tensors):
    args = [decode(a, tensors) for a in enc["args"]]
    kwargs = {k: decode(v, tensors) for k, v in enc["kwargs"].items()}
    return args, kwargs


def flatten_result(result):
    """Flatten a call's result into an ordered list of (name, value) leaves.

    Leaves are tensors or Python scalars; the structure string lets the supervisor tell a tensor
    from a tuple holding one tensor.
    """
    leaves = []

    def walk(v, name):
        if isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                walk(x, f"{name}.{i}")
        else:
            leaves.append((name, v))

    if isinstance(result, (tuple, list)):
        walk(result, "out")
        # Named tuples (torch.min's) and lists count as tuples: only the leaves matter.
        structure = f"tuple[{len(result)}]"
    else:
        leaves.append(("out", result))
        structure = "single"
    return structure, leaves


def scalar_to_tensor(v):
    """0-d tensor for a Python scalar leaf (bool, int, float), else None."""
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool)
    if isinstance(v, int):
        return torch.tensor(v, dtype=torch.int64)
    if isinstance(v, float):
        return torch.tensor(v, dtype=torch.float64)
    return None
