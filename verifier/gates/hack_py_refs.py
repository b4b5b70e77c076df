"""Every place a function of the candidate is referenced, and the arguments its call sites pass.

A def is referenced by each name load bound to it; a method by every ``x.<name>`` whatever ``x``
is (receiver-insensitive, so never fewer than the real references); an ``__init__`` also by every
use of its class or a subclass. When every reference is the callee of a call, those calls are all
the function's call sites, and a parameter can be followed to the arguments passed to it.
"""

from __future__ import annotations

import ast
from typing import Callable

from verifier.gates.hack_py_symbols import Param, Symbols

Mro = Callable[[ast.ClassDef], list[ast.ClassDef]]
STAR = object()  # an argument passed through *args/**kwargs: any parameter may receive it


def references(fn: ast.AST, symbols: Symbols, mro: Mro) -> list[ast.AST]:
    """Load nodes that may denote ``fn`` (for a lambda: the lambda itself)."""
    if isinstance(fn, ast.Lambda):
        return [fn]
    refs = [n for n in symbols.loads.get(fn.name, []) if binds_to(n, fn, "def", symbols)]
    cls = symbols.enclosing_class(fn)
    if cls is not None:
        refs += symbols.loads.get("." + fn.name, [])
        if fn.name == "__init__":
            family = [c for c in symbols.classes if any(base is cls for base in mro(c))]
            refs += [n for c in family for n in symbols.loads.get(c.name, []) if binds_to(n, c, "class", symbols)]
    return refs


def binds_to(name: ast.Name, node: ast.AST, kind: str, symbols: Symbols) -> bool:
    bindings = symbols.lookup(name.id, symbols.scope.get(id(name), symbols.tree)) or []
    return any(b.kind == kind and b.node is node for b in bindings)


def call_sites(fn: ast.AST, symbols: Symbols, mro: Mro) -> list[ast.Call] | None:
    """The calls of ``fn``, or None when it is also referenced some other way (then it may be
    called from anywhere, with anything)."""
    if isinstance(fn, ast.Lambda) or fn.name in ("__call__", "forward"):
        return None
    calls = []
    for ref in references(fn, symbols, mro):
        parent = symbols.parent.get(id(ref))
        if isinstance(parent, ast.Call) and parent.func is ref:
            calls.append(parent)
        elif not (isinstance(parent, ast.ClassDef) and ref in parent.bases):
            return None
    return calls


def argument(call: ast.Call, param: Param, shift: int) -> ast.expr | object | None:
    """The expression ``call`` passes to ``param`` (``shift`` positional parameters are bound
    before the call's own arguments: self of a bound method); None when it passes nothing (the
    default applies), STAR when it cannot be told (``*args``, ``**kwargs``)."""
    for keyword in call.keywords:
        if keyword.arg == param.name:
            return keyword.value
    if param.position is not None:
        index = param.position - shift
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) and i <= index:
                return STAR
            if i == index:
                return arg
    return STAR if any(k.arg is None for k in call.keywords) else None
