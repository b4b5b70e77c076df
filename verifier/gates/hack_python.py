"""Static policy on the candidate's Python AST: a registry of small named checks, each a refusal
that is certain whatever the candidate computes.

Each check takes a :class:`PyContext` and yields :class:`Finding` s; the comment on each names the
exploit it catches (research/verifier.md §2.2 ids). Names are resolved to what they denote
(:mod:`verifier.gates.hack_py_resolve`: import aliases, module constants, ``self`` attributes,
containers of functions, helper return values), so ``functools.reduce(operator.mul, shape, 1)`` is
shape arithmetic and ``torch.os`` is the os module. Refused anywhere, import time included: the
reference's names, forbidden modules (files, processes, network, threads, timers, raw memory),
try/except fallbacks, patching torch or other modules, tensor subclasses, introspection that
reaches frames or raw memory, strings evaluated as code, process-global torch state. In code that
runs per call (:mod:`verifier.gates.hack_py_phases`): host compute (numpy or Python on tensor data).

Not judged here: whether ``forward`` computes with torch, calls an nn layer or draws random numbers.
The runner observes every ATen op each call dispatches (research/verifier.md G5), which names
cannot hide from; a static guess from names rejected honest code. ``if __name__ == "__main__":``
blocks never run in the verifier (the candidate is imported under another name) and are skipped,
unless the candidate rebinds ``__name__``; ``getattr(obj, "name")`` with a constant name is read
as ``obj.name``.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator

from verifier.gates.hack_py_checks import (file_and_process_findings, host_compute_findings, io_name,
                                           string_evaluation_findings)
from verifier.gates.hack_py_context import Finding, PyContext, dotted
from verifier.gates.hack_py_names import (ALLOWED_FROM_NAMES, ALLOWED_IMPORTS, CUDA_REFUSED, EVALUATING_TYPING,
                                          FORBIDDEN_BUILTINS, FORBIDDEN_DUNDERS, FORBIDDEN_MEMBERS, FRAME_ATTRS,
                                          HOOK_NAMES, HOOK_PREFIXES, POINTER_ATTRS, REEXPORT_EXCEPTIONS,
                                          REEXPORTED_MODULES, RNG_STATE, STATE_CHANGERS, SYSTEM_MODULES)
from verifier.gates.hack_py_prepare import prepare
from verifier.gates.hack_py_resolve import TooComplex

__all__ = ["CHECKS", "Finding", "PyContext", "run_python_checks"]

Check = Callable[[PyContext], Iterator[Finding]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = fn
        return fn
    return register


@check("imports")
def _imports(ctx: PyContext) -> Iterator[Finding]:
    # D6/C2/C4/D4/B6: os, subprocess, threading, socket, ctypes, time, inspect, gc... give
    # processes, threads, timers, files, introspection or raw memory; private members of the
    # allowed modules (dataclasses._create_fn, typing._eval_type) evaluate strings as code.
    for node in ctx.nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if not _importable(a.name, ctx):
                    yield Finding("imports", f"import of {a.name!r} is not allowed{_why(a.name)}", node.lineno)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module in ctx.extra_imports and not node.level:
                continue
            if node.level or not _importable(module, ctx):
                yield Finding("imports", f"import from {module or '.'!r} is not allowed{_why(module)}", node.lineno)
            elif any(a.name == "*" for a in node.names):
                yield Finding("imports", f"from {module} import * is not allowed (name every import)", node.lineno)
            elif module in ALLOWED_FROM_NAMES:
                bad = [a.name for a in node.names if a.name not in ALLOWED_FROM_NAMES[module]]
                if bad:
                    yield Finding("imports", f"from {module} import {bad[0]} is not allowed", node.lineno)
    for node, name in ctx.all_chains():
        parts = name.split(".")
        if parts[0] == "verifier" and name not in ("verifier", "verifier.cpu_native", "verifier.cpu_native.load_c"):
            yield Finding("imports", f"{name}: only verifier.cpu_native.load_c may be used", node.lineno)
        hidden = [p for p in parts[1:] if p in REEXPORTED_MODULES and (parts[0], p) not in REEXPORT_EXCEPTIONS]
        if hidden:
            yield Finding("imports", f"{name} reaches the {hidden[0]!r} module through {parts[0]}, which is not "
                          f"allowed{_why(hidden[0])}", node.lineno)
        elif parts[0] not in ("torch", "numpy") and parts[0] not in ctx.extra_imports \
                and any(_private(p) for p in parts[1:]):
            yield Finding("imports", f"{name}: private internals of {parts[0]} are not allowed", node.lineno)


def _importable(module: str, ctx: PyContext) -> bool:
    """Allowed modules, the backend's kernel language, and torch submodules whose names no other
    check refuses (torch.nn.init, torch.cuda, torch.autograd...)."""
    if module in ALLOWED_IMPORTS or module in ctx.extra_imports:
        return True
    return module.startswith("torch.") and not torch_name_problem(module) and not io_name(module)


def _why(module: str) -> str:
    if module.split(".")[0] in SYSTEM_MODULES:
        return " (files, processes, network, threads, timers and raw memory are off limits)"
    return ""


@check("no_try_fallback")
def _no_try(ctx: PyContext) -> Iterator[Finding]:
    # A4: try/except around the kernel falls back to torch when the native path raises.
    for node in ctx.nodes:
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield Finding("no_try_fallback", "try/except is not allowed (no fallback paths)", node.lineno)


@check("no_reference_reuse")
def _no_reference(ctx: PyContext) -> Iterator[Finding]:
    # A5: `class ModelNew(Model): pass` or calling the reference Model: a name the candidate never
    # binds can only come from the harness's namespace. Its own Model (a copy of the reference,
    # KernelBench's layout with get_inputs) is its own code: what forward computes is observed.
    for node in ctx.nodes:
        if isinstance(node, ast.Name) and node.id in ("Model", "get_inputs", "get_init_inputs") \
                and ctx.symbols.lookup(node.id, ctx.symbols.scope.get(id(node), ctx.tree)) is None:
            yield Finding("no_reference_reuse", f"the reference name {node.id!r} is not defined by the candidate "
                          "and must not be used", node.lineno)


@check("forbidden_builtins")
def _builtins(ctx: PyContext) -> Iterator[Finding]:
    # C4/D1/D4/B2/B6: exec/eval/getattr-obfuscation, open(), id()-keyed caches, introspection,
    # also when aliased (o = open) or reached through typing's string evaluation.
    for node in ctx.nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in FORBIDDEN_BUILTINS \
                and ctx.symbols.lookup(node.id, ctx.symbols.scope.get(id(node), ctx.tree)) is None:
            yield Finding("forbidden_builtins", f"{node.id}() is not allowed", node.lineno)
        elif isinstance(node, ast.Call) and len(node.args) == 3 and ctx.names(node.func) == {"type"}:
            yield Finding("forbidden_builtins", "type(name, bases, namespace) creates a class dynamically", node.lineno)


@check("introspection")
def _introspection(ctx: PyContext) -> Iterator[Finding]:
    # B6/C4/D1: frame and object introspection (__globals__, __subclasses__, __dict__, tb_frame,
    # gi_frame...), numpy's .ctypes (ctypes.pythonapi from pure Python), objects posing as arrays
    # or tensors (__array_interface__: raw memory), pointer-keyed caches (B2).
    for node in ctx.nodes:
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        if name in FORBIDDEN_DUNDERS:
            yield Finding("introspection", f"{name} is not allowed", node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
            yield Finding("introspection", f".{node.attr} reaches frames, code or raw memory", node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in POINTER_ATTRS:
            yield Finding("introspection", f".{node.attr} (pointer/version-keyed caching) is not allowed; "
                          "pass tensors to load_c functions directly", node.lineno)
        if isinstance(node, ast.ClassDef):
            for member in set(ctx.symbols.bindings[id(node)]) & FORBIDDEN_MEMBERS:
                yield Finding("introspection", f"class {node.name} defines {member} (poses as a tensor or array)",
                              node.lineno)


@check("patching")
def _patching(ctx: PyContext) -> Iterator[Finding]:
    # D1/C4: torch.relu = ..., nn.Module.__call__ = ..., del F.relu, cpu_native.CALLS[0] += 1:
    # writes into torch or any other module (reference, timer or call-counter patching).
    for node in ctx.nodes:
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            targets = [ast.Subscript(value=node.func.value)]
        if isinstance(node, (ast.Attribute, ast.Name)) and _hooks(ctx, node):
            yield Finding("patching", f"{dotted(node)}: hooks and parametrizations change what calling a "
                          "module runs", node.lineno)
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) \
                    and ctx.patches_module(target, container=isinstance(target, ast.Subscript)):
                what = dotted(target) if isinstance(target, ast.Attribute) else dotted(target.value)
                yield Finding("patching", f"writing to {what} (patching a module) is not allowed", node.lineno)

def _hooks(ctx: PyContext, node: ast.Attribute | ast.Name) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id
    if isinstance(node, ast.Attribute) and name.startswith("_") and "hook" in name:
        return True  # nn.Module's hook tables (_forward_hooks...) and torch's global ones
    if name.startswith(HOOK_PREFIXES):
        return isinstance(node, ast.Attribute) or bool(ctx.names(node))
    return name in HOOK_NAMES and any(n.startswith("torch.") for n in ctx.names(node))


MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "clear", "remove", "__setitem__"}


@check("tensor_subclass")
def _subclass(ctx: PyContext) -> Iterator[Finding]:
    # C3: lazy tensor subclasses / proxies computing on first read.
    for node in ctx.nodes:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if ctx.names(base) & {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"}:
                    yield Finding("tensor_subclass", f"class {node.name} subclasses torch.Tensor", node.lineno)


@check("global_state")
def _global_state(ctx: PyContext) -> Iterator[Finding]:
    # C7/A13/C1/C6: thread counts, default dtype, denormals, RNG seeding or reading the verifier's
    # seed, torch internals (_C, ops, jit, library), the profiler's hooks, side streams and graphs.
    for node, name in ctx.all_chains():
        problem = torch_name_problem(name)
        if problem:
            yield Finding("global_state", f"{name} is not allowed ({problem})", node.lineno)


def torch_name_problem(name: str) -> str:
    """Why a torch name is refused anywhere ("" if it is not)."""
    parts = name.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return ""
    if parts[1] in STATE_CHANGERS or _private(parts[1]):
        return "global state, internals or the RNG"
    if any(p in RNG_STATE for p in parts[1:]):
        return "seeds or reads the random number generator, or hooks the profiler"
    if parts[1] == "cuda" and len(parts) > 2 and parts[2] in CUDA_REFUSED:
        return "work on another stream or a replayed graph escapes the timer"
    return ""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@check("host_compute_in_forward")
def _host_compute(ctx: PyContext) -> Iterator[Finding]:
    # A1 off the dispatcher: numpy or Python on tensor data (x.numpy(), x.tolist()) per call,
    # which the runner's ATen observation cannot see.
    yield from host_compute_findings(ctx)


@check("string_evaluation")
def _strings(ctx: PyContext) -> Iterator[Finding]:
    # Issue 23 class 4: strings evaluated as code (typing.get_type_hints/ForwardRef, string
    # annotations that are not types, operator.attrgetter with a computed name).
    for node, name in ctx.all_chains():
        if name in EVALUATING_TYPING:
            yield Finding("string_evaluation", f"{name} evaluates strings as code", node.lineno)
    yield from string_evaluation_findings(ctx)


@check("file_and_process_apis")
def _files(ctx: PyContext) -> Iterator[Finding]:
    # A5/D4 and issue 13: torch.save/load/from_file, numpy load/save/memmap/tofile, pickling and
    # shared-memory files, load_inline(build_directory=...) -- at import time too.
    yield from file_and_process_findings(ctx)


def run_python_checks(source: str, task_dtype: str = "float32", disabled: tuple[str, ...] = (),
                      extra_imports: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings of every enabled check, deduplicated, in source order. A candidate that is not
    valid Python yields none (the compile gate reports it with its location); one that is not
    text, or too deep or too tangled to analyse, yields a single finding (the policy fails
    closed); nothing raises."""
    try:
        tree = prepare(ast.parse(source))
    except SyntaxError:
        return []
    except ValueError as exc:  # e.g. a lone surrogate: no compiler will read it either
        return [Finding("policy", f"the candidate is not valid UTF-8 text ({exc})")]
    except (RecursionError, MemoryError):
        return [Finding("policy", "the candidate is nested too deeply to parse")]
    try:
        ctx = PyContext.from_tree(tree, task_dtype, extra_imports)
        findings = [f for name, fn in CHECKS.items() if name not in disabled for f in fn(ctx)]
    except RecursionError:
        return [Finding("policy", "the candidate is nested too deeply for the static policy; simplify it")]
    except TooComplex as exc:
        return [Finding("policy", f"the candidate's names refer to each other too much to analyse ({exc}); "
                        "simplify it")]
    order = list(CHECKS)
    unique = {(f.line, order.index(f.check), f.message): f for f in findings}
    return [unique[key] for key in sorted(unique)]
