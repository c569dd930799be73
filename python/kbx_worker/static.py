"""Static checks of a candidate's source: read with ast, never run."""

import ast

_JIT_NAMES = {"jit", "autotune", "heuristics"}
_SUSPICIOUS_MODULES = {"ctypes", "subprocess", "socket", "multiprocessing", "threading", "signal",
                       "gc", "inspect", "importlib", "builtins", "sys"}


def _decorator_names(node):
    names = []
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute):
            names.append(target.attr)
        elif isinstance(target, ast.Name):
            names.append(target.id)
    return names


def check_source(source, entry):
    """Facts about the source: syntax, entry present, Triton kernels, suspicious imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return {"syntax_ok": False, "message": f"line {e.lineno}: {e.msg}"}
    except (ValueError, RecursionError, MemoryError) as e:  # a NUL byte, nesting past the parser
        # the parser's own stack overflow is a MemoryError without a message
        why = str(e)[:200] or "nested too deeply for Python's parser"
        return {"syntax_ok": False, "message": f"{type(e).__name__}: {why}"}
    kernels = []
    entry_found = False
    suspicious = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if "jit" in _decorator_names(node) or (
                    set(_decorator_names(node)) & _JIT_NAMES and "jit" in _decorator_names(node)):
                kernels.append(node.name)
        if isinstance(node, ast.Import):
            suspicious |= {a.name.split(".")[0] for a in node.names} & _SUSPICIOUS_MODULES
        if isinstance(node, ast.ImportFrom) and node.module:
            suspicious |= {node.module.split(".")[0]} & _SUSPICIOUS_MODULES
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            entry_found = True
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == entry for t in node.targets):
                entry_found = True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name) == entry for a in node.names):
                entry_found = True
    return {"syntax_ok": True, "entry_found": entry_found, "triton_kernels": sorted(kernels),
            "suspicious_imports": sorted(suspicious)}
