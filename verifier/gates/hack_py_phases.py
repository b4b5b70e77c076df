"""Which of the candidate's functions may run when ``forward`` runs (the per-call policy applies)
and which run only while the module is imported or the model is built (the import-time policy).

Reachability is decided the safe way round: a function runs per call unless it is *proven*
import-time only. A def is import-time only when it can be called by name (no property, no dunder
Python calls by itself, no name nn.Module calls by itself, only transparent decorators) and every
reference to it anywhere is a direct call from import-time code: module level, a class body, or
another import-time-only function (a greatest fixpoint). A method is referenced by every
``x.<name>`` whatever ``x`` is; a class's ``__init__`` also by every use of the class. Any other
use (an alias, a dict or list of functions, a decorator, a callback, ``self.f = f``) makes the
function per-call, and with it everything it calls. Functions nothing references stay import-time
(they never run). Lambdas run per call, except one handed straight to an eager consumer
(``functools.reduce``, ``sorted``/``min``/``max``) by import-time code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from verifier.gates.hack_py_names import NN_MODULE_NAMES, TRANSPARENT_DECORATORS
from verifier.gates.hack_py_refs import references
from verifier.gates.hack_py_resolve import Resolver
from verifier.gates.hack_py_symbols import DEFS, Symbols


@dataclass(frozen=True)
class Phases:
    per_call: frozenset[int]  # ids of function nodes that may run per call
    nodes: tuple[ast.AST, ...]  # every node evaluated per call (bodies, decorators of per-call defs)

    def runs_per_call(self, fn: ast.AST) -> bool:
        return id(fn) in self.per_call


def classify(symbols: Symbols, resolver: Resolver, kernels: set[int]) -> Phases:
    outside = _kernel_bodies(symbols, kernels)
    candidates = [fn for fn in symbols.functions if id(fn) not in outside]
    eligible = {id(fn): fn for fn in candidates if _eligible(fn, symbols, resolver)}
    refs = {key: references(fn, symbols, resolver.mro) for key, fn in eligible.items()}
    import_only = set(eligible)
    while True:
        per_call = {id(fn) for fn in candidates if id(fn) not in import_only}
        nodes = _per_call_nodes(symbols, candidates, per_call)
        constructed = _constructed_per_call(nodes, resolver)
        dropped = {key for key in import_only
                   if _constructed(eligible[key], symbols, resolver, constructed)
                   or not all(_import_time_use(r, symbols, import_only) for r in refs[key])}
        if not dropped:
            return Phases(frozenset(per_call), tuple(nodes))
        import_only -= dropped


def _kernel_bodies(symbols: Symbols, kernels: set[int]) -> set[int]:
    """Kernel defs and every function nested in one (they compile to the kernel, not to Python)."""
    inside = set(kernels)
    for fn in symbols.functions:
        scope = symbols.scope_parent.get(id(fn))
        while scope is not None:
            if id(scope) in kernels:
                inside.add(id(fn))
            scope = symbols.scope_parent.get(id(scope))
    return inside


def _eligible(fn: ast.AST, symbols: Symbols, resolver: Resolver) -> bool:
    if isinstance(fn, ast.Lambda):
        return _eagerly_consumed(fn, symbols, resolver)
    name = fn.name
    if isinstance(fn, ast.AsyncFunctionDef) or id(fn) in symbols.lazy:
        return False  # generators and coroutines run their body later, when consumed
    if name.startswith("__") and name.endswith("__") and name != "__init__":
        return False
    if symbols.enclosing_class(fn) is not None and name in NN_MODULE_NAMES:
        return False
    return all(_names(d.func if isinstance(d, ast.Call) else d, resolver) & TRANSPARENT_DECORATORS
               for d in fn.decorator_list)


def _eagerly_consumed(fn: ast.Lambda, symbols: Symbols, resolver: Resolver) -> bool:
    """``functools.reduce(<lambda>, ...)`` or ``sorted/min/max(..., key=<lambda>)``: called there and
    then, never returned (a lambda passed as a value to min/max could come back as the result)."""
    parent = symbols.parent.get(id(fn))
    if isinstance(parent, ast.keyword) and parent.arg == "key":
        call, wanted = symbols.parent.get(id(parent)), {"sorted", "min", "max"}
    elif isinstance(parent, ast.Call) and parent.args and parent.args[0] is fn:
        call, wanted = parent, {"functools.reduce"}
    else:
        return False
    return bool(_names(call.func, resolver) & wanted)


def _names(expr: ast.expr, resolver: Resolver) -> set[str]:
    """Dotted names of the torch/module/builtin targets an expression resolves to."""
    targets = resolver.resolve(expr)
    if any(t.kind not in ("torch", "module", "builtin") for t in targets):
        return set()
    return {t.name for t in targets}


def _import_time_use(ref: ast.AST, symbols: Symbols, import_only: set[int]) -> bool:
    """A reference that cannot make the function run per call: a direct call from import-time
    code, or anywhere a use that never calls (a class base, an annotation, isinstance)."""
    parent = symbols.parent.get(id(ref))
    if isinstance(parent, ast.ClassDef) and any(b is ref for b in parent.bases):
        return True
    if _in_annotation(ref, symbols) or _isinstance_argument(ref, parent, symbols) or _super_argument(ref, parent, symbols):
        return True
    runs_in = symbols.runs_in.get(id(ref))
    if runs_in is not None and id(runs_in) not in import_only:
        return False
    if isinstance(ref, ast.Lambda):
        return True  # eligibility checked it is consumed where it stands
    return isinstance(parent, ast.Call) and parent.func is ref


def _isinstance_argument(ref: ast.AST, parent: ast.AST | None, symbols: Symbols) -> bool:
    return isinstance(parent, ast.Call) and ref in parent.args and isinstance(parent.func, ast.Name) \
        and parent.func.id in ("isinstance", "issubclass") \
        and symbols.lookup(parent.func.id, symbols.scope.get(id(parent.func), symbols.tree)) is None


def _super_argument(ref: ast.AST, parent: ast.AST | None, symbols: Symbols) -> bool:
    """``super(ModelNew, self)``: names the class without constructing it."""
    return isinstance(parent, ast.Call) and bool(parent.args) and parent.args[0] is ref \
        and isinstance(parent.func, ast.Name) and parent.func.id == "super" \
        and symbols.lookup("super", symbols.scope.get(id(parent.func), symbols.tree)) is None


def _in_annotation(ref: ast.AST, symbols: Symbols) -> bool:
    """Whether ``ref`` is (part of) a type annotation: evaluated at most once, never called."""
    child, parent = ref, symbols.parent.get(id(ref))
    while isinstance(parent, (ast.Subscript, ast.Tuple, ast.List, ast.BinOp, ast.Attribute)):
        child, parent = parent, symbols.parent.get(id(parent))
    if isinstance(parent, ast.arg):
        return parent.annotation is child
    if isinstance(parent, ast.AnnAssign):
        return parent.annotation is child
    return isinstance(parent, DEFS) and parent.returns is child


def _per_call_nodes(symbols: Symbols, candidates: list[ast.AST], per_call: set[int]) -> list[ast.AST]:
    """Nodes evaluated per call: bodies of per-call functions and the decorators wrapping them."""
    nodes = [n for n in symbols.nodes
             if (runs_in := symbols.runs_in.get(id(n))) is not None and id(runs_in) in per_call]
    for fn in candidates:
        if id(fn) in per_call and isinstance(fn, DEFS):
            nodes.extend(n for d in fn.decorator_list for n in ast.walk(d))
    return nodes


def _constructed_per_call(nodes: list[ast.AST], resolver: Resolver) -> set[int] | None:
    """Ids of candidate classes instantiated by per-call code; None when any class may be
    (``type(obj)(...)``, ``dataclasses.replace``)."""
    found: set[int] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        for target in resolver.resolve(node.func):
            if target.kind == "class":
                found.update(id(c) for c in resolver.mro(target.node))
            elif (target.kind, target.name) in (("builtin", "type"), ("module", "dataclasses.replace")):
                return None
    return found


def _constructed(fn: ast.AST, symbols: Symbols, resolver: Resolver, constructed: set[int] | None) -> bool:
    if isinstance(fn, ast.Lambda) or fn.name != "__init__":
        return False
    cls = symbols.enclosing_class(fn)
    return constructed is None or (cls is not None and id(cls) in constructed)
