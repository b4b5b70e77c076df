"""The checks of the Python policy that need name resolution: the per-call ones (torch compute,
RNG, torch modules called, host compute) over the nodes :mod:`verifier.gates.hack_py_phases`
found to run per call, and the file/process one over the whole candidate (import time included).
Registered, with the simpler checks, in :mod:`verifier.gates.hack_python`.
"""

from __future__ import annotations

import ast
from typing import Iterator

from verifier.gates.hack_py_context import Finding, PyContext, dotted
from verifier.gates.hack_py_names import (HOST_BRIDGES, IO_KEYWORDS, IO_METHODS, LOADERS, NN_CONTAINERS,
                                          NUMPY_IO, RNG, TENSOR_COMPUTE, TORCH_ALLOWED, TORCH_ALLOWED_DOTTED,
                                          TORCH_ALLOWED_PREFIXES, TORCH_IO, TORCH_UTILS_IO)

PER_CALL = "(only allocation, views and copies are allowed in code that runs per call)"
FILES = "file, process, network, pickle and memory-mapping APIs are not allowed (at import time either)"


def torch_allowed(name: str) -> bool:
    parts = name.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[1] in TORCH_ALLOWED):
        return True
    return name in TORCH_ALLOWED_DOTTED or name.startswith(TORCH_ALLOWED_PREFIXES)


def _label(node: ast.AST, name: str) -> str:
    text = dotted(node)
    return f"{name}()" if text == name else f"{text} (= {name})"


def _tensor_receiver(ctx: PyContext, receiver: ast.expr) -> str | None:
    """None when ``receiver`` cannot be a tensor; "" when it may be one; the reason when it
    cannot be resolved statically (then it may be one too)."""
    if _python_container(ctx, receiver):
        return None  # list.sort() is not Tensor.sort()
    targets = ctx.resolve(receiver)
    if any(t.kind in ("tensor", "torch_obj") for t in targets):
        return ""
    unknown = [t.name for t in targets if t.kind == "unknown"]
    return f"{dotted(receiver)} cannot be resolved statically ({unknown[0]}) and may be a tensor" if unknown else None


CONTAINER_BUILTINS = {"list", "tuple", "dict", "set", "sorted", "frozenset"}
CONTAINER_NODES = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _python_container(ctx: PyContext, expr: ast.expr, depth: int = 0) -> bool:
    """Whether ``expr`` is certainly a Python list/tuple/dict/set (a literal, a comprehension, a
    call of list()/sorted()..., or a local name only ever bound to those)."""
    if isinstance(expr, CONTAINER_NODES):
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        return ctx.names(expr.func) <= CONTAINER_BUILTINS and bool(ctx.names(expr.func)) \
            and all(t.kind == "builtin" for t in ctx.resolve(expr.func))
    if isinstance(expr, ast.Name) and depth < 5:
        bindings = ctx.symbols.lookup(expr.id, ctx.symbols.scope.get(id(expr), ctx.tree), mutations=False) or []
        return bool(bindings) and all(b.kind == "value" and _python_container(ctx, b.node, depth + 1)
                                      for b in bindings)
    return False


def _method_findings(ctx: PyContext, check: str, methods: set[str], what: str) -> Iterator[Finding]:
    for node in ctx.per_call_nodes():
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store) \
                and (node.attr in methods or (node.attr.endswith("_") and node.attr[:-1] in methods)):
            why = _tensor_receiver(ctx, node.value)
            if why is not None:
                text = f"{dotted(node)}() {what}" if not why else f"{dotted(node)}(): {why}; .{node.attr}() {what}"
                yield Finding(check, text, node.lineno)


def torch_compute_findings(ctx: PyContext) -> Iterator[Finding]:
    for node, name in ctx.per_call_chains():
        if name.split(".")[0] == "torch" and not torch_allowed(name):
            yield Finding("torch_compute_in_forward", f"{_label(node, name)} computes with torch {PER_CALL}", node.lineno)
    yield from _method_findings(ctx, "torch_compute_in_forward", TENSOR_COMPUTE, f"computes with torch {PER_CALL}")


def rng_findings(ctx: PyContext) -> Iterator[Finding]:
    for node, name in ctx.per_call_chains():
        if name.split(".")[0] in ("torch", "numpy") and name.rsplit(".", 1)[-1] in RNG:
            yield Finding("rng_outside_init", f"random numbers ({_label(node, name)}) in code that runs per call",
                          node.lineno)
    yield from _method_findings(ctx, "rng_outside_init", RNG, "draws random numbers in code that runs per call")


def host_compute_findings(ctx: PyContext) -> Iterator[Finding]:
    for node, name in ctx.per_call_chains():
        if name.split(".")[0] == "numpy":
            yield Finding("host_compute_in_forward", f"{_label(node, name)}: numpy in code that runs per call "
                          "computes outside the native kernel (build tables at import or in __init__)", node.lineno)
    yield from _method_findings(ctx, "host_compute_in_forward", HOST_BRIDGES,
                                "hands tensor data to Python/numpy, outside the native kernel")


def nn_module_findings(ctx: PyContext) -> Iterator[Finding]:
    for node in ctx.per_call_nodes():
        if not isinstance(node, ast.Call):
            continue
        for target in sorted(ctx.resolve(node.func), key=lambda t: (t.name in NN_CONTAINERS, t.name)):
            if target.kind == "torch_obj":
                yield Finding("nn_module_called", f"{dotted(node.func)}(...) calls a torch module "
                              f"({target.name}) in code that runs per call", node.lineno)
                break
            if target.kind == "instance" and _inherits_torch_forward(ctx, target.node):
                yield Finding("nn_module_called", f"{dotted(node.func)}(...) runs the forward of "
                              f"{_inherits_torch_forward(ctx, target.node)}", node.lineno)
                break
    yield from _class_findings(ctx)


def _inherits_torch_forward(ctx: PyContext, cls: ast.ClassDef) -> str:
    """The torch base whose forward an object of ``cls`` runs when called ("" if none)."""
    bases = sorted(ctx.resolver.torch_bases(cls) - NN_CONTAINERS)
    own = any(ctx.symbols.members(c, m) for c in ctx.resolver.mro(cls) for m in ("forward", "__call__"))
    return bases[0] if bases and not own else ""


def _class_findings(ctx: PyContext) -> Iterator[Finding]:
    """Classes whose forward is torch's: inherited from an nn layer, or bound to a torch API."""
    for cls in ctx.symbols.classes:
        base = _inherits_torch_forward(ctx, cls)
        if base:
            yield Finding("nn_module_called", f"class {cls.name} inherits forward from {base}", cls.lineno)
        for member in ("forward", "__call__"):
            for binding in ctx.symbols.members(cls, member):
                for target in ctx.resolver.resolve_binding(binding):
                    if target.kind == "torch_obj" or (target.kind == "torch" and not torch_allowed(target.name)):
                        yield Finding("nn_module_called", f"{cls.name}.{member} is {target.name}", cls.lineno)


def _io_name(name: str) -> bool:
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
    nodes = ctx.nodes
    for node, name in ctx.all_chains():
        if _io_name(name):
            yield Finding("file_and_process_apis", f"{_label(node, name)}: {FILES}", node.lineno)
    for node in nodes:
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store) and node.attr in IO_METHODS:
            kinds = {t.kind for t in ctx.resolve(node.value)}
            if kinds - {"instance", "class", "native", "kernel", "func", "torch", "module"}:
                yield Finding("file_and_process_apis", f"{dotted(node)}(): {FILES}", node.lineno)
        elif isinstance(node, ast.Call) and ctx.names(node.func) & LOADERS:
            for keyword in node.keywords:
                if keyword.arg in IO_KEYWORDS:
                    yield Finding("file_and_process_apis", f"{keyword.arg}= chooses where files are written; "
                                  "the verifier chooses the build directory", node.lineno)
