"""The arguments of a native loader call, read statically through the build helpers that make it.

Most candidates call ``load_c`` / ``load_inline`` at module level with literals and module
constants. Real solutions also wrap the loader in a helper (``def _build(name, src, fns): return
load_inline(name=name, cpp_sources=src, functions=fns)``) called once at import. Such a call is
read by binding the helper's parameters to what each call site passes (literals, module
constants, f-strings and concatenations of those, the parameter's default), through chains of
helpers and their single-assignment locals. Each call path gives one set of arguments: one native
source for the compile gate to build and the hack gate to scan. Which calls reach a helper, and
how a method call binds ``self``, come from the hack gate's symbol table and resolver
(:mod:`verifier.gates.hack_py_refs`), so both gates agree on a helper's callers.

What is still computed at run time (a parameter fed by ``open(...)``, a helper passed around as a
value or called from ``forward``) raises :class:`SourceExtractionError` naming the line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, TypeVar

from verifier.gates.hack_py_refs import STAR, argument, call_sites, references
from verifier.gates.hack_py_resolve import Resolver, TooComplex
from verifier.gates.hack_py_symbols import Symbols
from verifier.gates.hack_py_targets import decorator_name
from verifier.static_values import SourceExtractionError, module_constants, not_static, snippet, static_value

MAX_CHAIN = 8  # helpers calling helpers
MAX_PATHS = 64  # call paths of one loader call (each one is a build)

T = TypeVar("T")
Reader = Callable[[ast.expr], object]


@dataclass(frozen=True, eq=False)
class Frame:
    """One call of a helper: ``call`` passes the arguments, evaluated in the ``caller`` frame
    (None: module level). ``call`` None: the helper's callers cannot be seen (the harness calls
    it, or it is passed around as a value); its body is still read, its parameters are unknown."""

    function: ast.AST
    call: ast.Call | None
    shift: int  # positional parameters bound before the call's own arguments (self of a method)
    caller: "Frame | None"
    unseen: str = ""  # call None: why the callers cannot be seen

    def lines(self) -> tuple[int, ...]:
        """The call sites of this path, innermost first."""
        frame: Frame | None = self
        found = []
        while frame is not None:
            if frame.call is not None:
                found.append(frame.call.lineno)
            frame = frame.caller
        return tuple(found)


class _NeedsCaller(Exception):
    """A value depends on a parameter of the enclosing helper: read it once per call path."""


class BoundArgs:
    """Static values of the expressions of one candidate module, parameters bound per call path."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.consts = module_constants(tree)
        self.symbols = Symbols(tree)
        self._resolver: Resolver | None = None

    def per_call_path(self, call: ast.Call, evaluate: Callable[[Reader], T]) -> list[tuple[T, tuple[int, ...]]]:
        """``evaluate(read)`` reads what it needs of ``call``'s arguments with ``read(expr)``. It runs
        once when no helper parameter is involved, else once per call path of the enclosing helper
        (none when the helper is never called). Returns (result, call-site lines) pairs."""
        try:
            return [(evaluate(self._reader(_PROBE)), ())]
        except _NeedsCaller:
            pass
        frames = self._frames(self.symbols.runs_in.get(id(call)), 0)
        return [(evaluate(self._reader(frame)), frame.lines() if frame else ()) for frame in frames]

    # -- values --------------------------------------------------------------------------------

    def _reader(self, frame: Frame | None) -> Reader:
        """Static values of expressions, parameters bound as ``frame`` says."""
        return lambda node: static_value(node, lambda name, depth: self._name(name, frame, depth))

    def _name(self, name: ast.Name, frame: Frame | None, depth: int) -> object:
        owner = self.symbols.owner(name.id, self.symbols.scope.get(id(name), self.tree))
        if owner is None:
            raise not_static(name, f"{name.id} is not defined in the module")
        bindings = self.symbols.bindings[id(owner)][name.id]
        if len(bindings) != 1:  # the value a call sees would depend on when it runs
            where = "at module level" if owner is self.tree else f"in {_title(owner)}"
            raise not_static(name, f"{name.id} is bound more than once {where}")
        binding = bindings[0]
        if binding.kind in _BOUND_BY:
            raise not_static(name, f"{name.id} is {_BOUND_BY[binding.kind]}")
        if owner is self.tree:
            if name.id not in self.consts:
                raise not_static(name, f"{name.id} is not a module-level constant")
            return self._value(self.consts[name.id], None, depth)
        if binding.kind == "param":
            return self._param(binding.node, frame, depth)
        if binding.kind == "value":  # a local assigned once: read where the helper runs
            return self._value(binding.node, _find(frame, owner) or frame, depth)
        raise not_static(name, f"{name.id} is bound at run time")

    def _param(self, arg: ast.arg, frame: Frame | None, depth: int) -> object:
        param = self.symbols.params[id(arg)]
        title = f"parameter {param.name} of {_title(param.function)}"
        if param.star:
            raise not_static(arg, f"{title} collects *args/**kwargs")
        found = _find(frame, param.function)
        if found is None:
            if frame is _PROBE:
                raise _NeedsCaller
            raise not_static(arg, f"{title} is not bound on this call path")
        if found.call is None:
            raise not_static(arg, f"{title}: {found.unseen}, so the arguments it receives cannot be read statically")
        passed = argument(found.call, param, found.shift)
        if passed is STAR:
            raise not_static(found.call, f"it passes {param.name} through *args/**kwargs")
        if passed is None and param.default is None:
            raise not_static(found.call, f"it passes no {param.name}")
        try:
            return self._value(passed if passed is not None else param.default, found.caller, depth)
        except SourceExtractionError as exc:
            raise SourceExtractionError(f"{title}, called at line {found.call.lineno}: {exc}") from None

    def _value(self, node: ast.expr, frame: Frame | None, depth: int) -> object:
        return static_value(node, lambda name, inner: self._name(name, frame, inner), depth + 1)

    # -- call paths ----------------------------------------------------------------------------

    def _frames(self, fn: ast.AST | None, depth: int, path: frozenset[int] = frozenset()) -> list[Frame | None]:
        """Every call path from import-time code down to ``fn``. A path that re-enters a helper is
        skipped (what a recursion passes is not read; the loader refuses a source never built)."""
        if fn is None:
            return [None]
        if depth >= MAX_CHAIN:
            raise SourceExtractionError(f"line {fn.lineno}: build helpers call each other more than {MAX_CHAIN} deep")
        try:
            sites = call_sites(fn, self.symbols, self.resolver.mro)
        except TooComplex as exc:
            raise SourceExtractionError(f"{exc}: the candidate's names are too tangled to find {_title(fn)}'s callers") from None
        frames: list[Frame | None] = []
        if sites is None or not sites and self.symbols.enclosing_class(fn) is not None or _harness_called(fn, self.symbols):
            frames.append(Frame(fn, None, 0, None, self._unseen(fn)))  # forward, __init__, a helper passed around
        for call in sites or ():
            caller = self.symbols.runs_in.get(id(call))
            if caller is fn or id(caller) in path:
                continue
            shift = self._shift(fn, call)
            frames += [Frame(fn, call, shift, outer) for outer in self._frames(caller, depth + 1, path | {id(fn)})]
            if len(frames) > MAX_PATHS:
                raise SourceExtractionError(f"line {fn.lineno}: {_title(fn)} is reached by more than {MAX_PATHS} call paths")
        return frames

    def _unseen(self, fn: ast.AST) -> str:
        """Why the callers of ``fn`` cannot be seen: the harness calls it, or it is used as a value."""
        for ref in references(fn, self.symbols, self.resolver.mro):
            parent = self.symbols.parent.get(id(ref))
            if not (isinstance(parent, ast.Call) and parent.func is ref) and getattr(ref, "lineno", None):
                return f"{_title(fn)} is used as a value at line {ref.lineno} ({snippet(parent or ref)})"
        return f"{_title(fn)} is called by the harness or from code whose callers cannot be seen"

    def _shift(self, fn: ast.AST, call: ast.Call) -> int:
        decorators = {decorator_name(d) for d in getattr(fn, "decorator_list", ())}
        if self.symbols.enclosing_class(fn) is None or "staticmethod" in decorators:
            return 0
        if "classmethod" in decorators:
            return 1
        try:
            shifts = self.resolver.shifts(call, True)
        except TooComplex as exc:
            raise SourceExtractionError(f"{exc}: the candidate's names are too tangled to bind {_title(fn)}'s self") from None
        if len(shifts) != 1:
            raise not_static(call, f"{snippet(call.func)} may or may not bind self")
        return shifts[0]

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self.symbols, set())
        return self._resolver


_BOUND_BY = {"element": "a loop or unpacking target", "def": "a function", "class": "a class", "import": "an import"}


def _harness_called(fn: ast.AST, symbols: Symbols) -> bool:
    """A method Python or torch calls without a call in the candidate (``__init__``, ``forward``...)."""
    name = getattr(fn, "name", "")
    return symbols.enclosing_class(fn) is not None and (name == "forward" or name.startswith("__") and name.endswith("__"))


_PROBE = Frame(ast.Module(body=[], type_ignores=[]), None, 0, None)  # first read: no parameter bound yet


def _find(frame: Frame | None, fn: ast.AST) -> Frame | None:
    while frame is not None and frame.function is not fn:
        frame = frame.caller
    return frame


def _title(scope: ast.AST) -> str:
    name = getattr(scope, "name", "<lambda>")
    return f"{name}()" if not isinstance(scope, ast.ClassDef) else f"class {name}"
