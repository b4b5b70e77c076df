"""The checks of the Python policy that need name resolution: host compute in code that runs per
call (over the nodes :mod:`verifier.gates.hack_py_phases` found to run per call), the
file/process one and the string-evaluation one over the whole candidate (import time included).
Registered, with the simpler checks, in :mod:`verifier.gates.hack_python`.

Torch compute, torch modules and random numbers in ``forward`` are not judged here: the runner
observes every ATen op each call dispatches, whatever name reached it. Host compute is, because
numpy and Python lists compute off the dispatcher, where no observer sees them.
"""

from __future__ import annotations

import ast
from typing import Iterator

from verifier.gates.hack_py_context import Finding, PyContext, dotted
from verifier.gates.hack_py_names import (HOST_BRIDGES, IO_KEYWORDS, IO_METHODS, LOADERS, NUMPY_IO, TORCH_IO,
                                          TORCH_UTILS_IO)

FILES = "file, process, network, pickle and memory-mapping APIs are not allowed (at import time either)"
HOST = "computes outside the native kernel, where no observer sees it (build tables at import or in __init__)"
TENSORS = ("tensor", "torch_obj")


def _label(node: ast.AST, name: str) -> str:
    text = dotted(node)
    return f"{name}()" if text == name else f"{text} (= {name})"


def _may_be_tensor(ctx: PyContext, expr: ast.expr) -> bool:
    return any(t.kind in TENSORS for t in ctx.resolve(expr))


def host_compute_findings(ctx: PyContext) -> Iterator[Finding]:
    """numpy called on something that may be a tensor, or tensor data handed to Python/numpy
    (``x.numpy()``, ``x.tolist()``), in code that runs per call. numpy on shapes and sizes
    (``np.prod(x.shape)``) is shape arithmetic, not compute."""
    for node in ctx.per_call_nodes():
        if isinstance(node, ast.Call):
            numpy = sorted(t.name for t in ctx.resolve(node.func) if t.kind == "module"
                           and t.name.split(".")[0] == "numpy")
            passed = [*node.args, *(k.value for k in node.keywords)]
            if numpy and any(_may_be_tensor(ctx, a.value if isinstance(a, ast.Starred) else a) for a in passed):
                yield Finding("host_compute_in_forward", f"{_label(node.func, numpy[0])} on tensor data {HOST}",
                              node.lineno)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store) and node.attr in HOST_BRIDGES:
            targets = ctx.resolve(node.value)
            if any(t.kind in (*TENSORS, "unknown") for t in targets):
                yield Finding("host_compute_in_forward", f"{dotted(node)}() hands tensor data to Python/numpy, "
                              f"which {HOST}", node.lineno)


def io_name(name: str) -> bool:
    """Whether a dotted name reaches files, pickling, shared memory or processes."""
    parts = name.split(".")
    if parts[0] == "torch" and len(parts) > 1:
        if parts[1] in TORCH_IO or "from_file" in parts:
            return True
        if parts[1] == "utils" and len(parts) > 2:
            return parts[2] in TORCH_UTILS_IO or (parts[2] == "cpp_extension" and len(parts) > 3
                                                   and parts[3] != "load_inline")
    if parts[0] == "numpy":
        return any(p in NUMPY_IO or (p.startswith("_") and not p.endswith("__")) for p in parts[1:])
    return False


def file_and_process_findings(ctx: PyContext) -> Iterator[Finding]:
    for node, name in ctx.all_chains():
        if io_name(name):
            yield Finding("file_and_process_apis", f"{_label(node, name)}: {FILES}", node.lineno)
    for node in ctx.nodes:
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store) and node.attr in IO_METHODS:
            kinds = {t.kind for t in ctx.resolve(node.value)}
            if kinds - {"instance", "class", "native", "kernel", "func", "torch", "module"}:
                yield Finding("file_and_process_apis", f"{dotted(node)}(): {FILES}", node.lineno)
        elif isinstance(node, ast.Call) and ctx.names(node.func) & LOADERS:
            for keyword in node.keywords:
                if keyword.arg in IO_KEYWORDS:
                    yield Finding("file_and_process_apis", f"{keyword.arg}= chooses where files are written; "
                                  "the verifier chooses the build directory", node.lineno)


# -- strings evaluated as code ------------------------------------------------------------------

TYPE_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.Load,
              ast.BinOp, ast.BitOr, ast.Expression)


def annotation_problem(text: str, depth: int = 0) -> str:
    """Why a string annotation is not a plain type expression ("" when it is one). ``typing``,
    ``functools.singledispatch`` and dataclass helpers may evaluate it as code, so only names,
    attributes, subscripts, ``X | Y`` and nested strings of the same kind may appear."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""  # evaluating it raises before anything runs
    for node in ast.walk(tree):
        if not isinstance(node, TYPE_NODES):
            return f"a {type(node).__name__} expression"
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if name.startswith("__") and name.endswith("__"):
            return f"the dunder name {name}"
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr):
            return "an operator other than |"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and depth < 4:
            inner = annotation_problem(node.value, depth + 1)
            if inner:
                return inner
    return ""


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.annotation
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def string_evaluation_findings(ctx: PyContext) -> Iterator[Finding]:
    # Issue 23 class 4: code hidden in a string annotation runs when typing or singledispatch
    # evaluates it; operator.attrgetter/methodcaller reach attributes by a computed name (getattr).
    for annotation in _annotations(ctx.tree):
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                problem = annotation_problem(node.value)
                if problem:
                    yield Finding("string_evaluation", f"the string annotation {node.value[:40]!r} is not a type "
                                  f"({problem}); annotations may be evaluated as code", node.lineno)
    for node in ctx.nodes:
        if isinstance(node, ast.Call) and ctx.names(node.func) & {"operator.attrgetter", "operator.methodcaller"}:
            first = node.args[0] if node.args else None
            names = first.value.split(".") if isinstance(first, ast.Constant) and isinstance(first.value, str) else []
            if not names or not all(n.isidentifier() and not n.startswith("__") for n in names):
                yield Finding("string_evaluation", f"{dotted(node.func)}() with a computed or dunder name reaches "
                              "attributes like getattr", node.lineno)
