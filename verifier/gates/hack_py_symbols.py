"""Symbol table of a candidate module, built once from its AST and never executed.

For every node: the scope its names are looked up in and the function whose execution evaluates
it (``None``: the import of the module; decorators, defaults and class bodies run in the enclosing
code, not in the function they belong to). For every scope: what each name may be bound to
(assignments, loop targets, defs, classes, imports, parameters). Attribute stores are indexed by
attribute name whatever the receiver (``x.attr = v`` anywhere counts for every ``attr``), and
container stores (``ops[k] = f``, ``ops.append(f)``) add to the container's possible contents.
Comprehensions share their enclosing scope. A name a function declares ``global`` (``nonlocal``)
is bound in the module (in the enclosing function that owns it), as Python does. The tables
over-approximate on purpose: a name bound in two places resolves to both.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "__setitem__", "appendleft"}
REGISTRARS = {"add_module", "register_module", "register_buffer", "register_parameter"}


@dataclass(frozen=True, eq=False)
class Binding:
    """What a name may be bound to. kind: value (an expression), element (one element of an
    iterable expression), def, class, import (dotted module path), param, unknown."""

    kind: str
    node: ast.AST | None = None
    dotted: str = ""


@dataclass(frozen=True)
class Param:
    function: ast.AST
    name: str
    default: ast.expr | None
    position: int | None  # index among the positional parameters (None: keyword-only, *args, **kwargs)
    star: bool = False  # *args / **kwargs

    @property
    def first(self) -> bool:
        """The first positional parameter (self/cls of a method)."""
        return self.position == 0


class Symbols:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parent: dict[int, ast.AST] = {}
        self.scope: dict[int, ast.AST] = {}
        self.runs_in: dict[int, ast.AST | None] = {}
        self.scope_parent: dict[int, ast.AST | None] = {id(tree): None}
        self.bindings: dict[int, dict[str, list[Binding]]] = defaultdict(lambda: defaultdict(list))
        self.mutations: dict[str, list[Binding]] = defaultdict(list)
        self.attr_stores: dict[str, list[Binding]] = defaultdict(list)
        self.wildcard_stores: list[Binding] = []
        self.returns: dict[int, list[ast.expr]] = defaultdict(list)
        self.params: dict[int, Param] = {}
        self.functions: list[ast.AST] = []
        self.classes: list[ast.ClassDef] = []
        self.loads: dict[str, list[ast.AST]] = defaultdict(list)  # "name" / ".attr" -> load nodes
        self.lazy: set[int] = set()  # ids of functions with yield/await (their body runs when consumed)
        self.nodes: list[ast.AST] = list(ast.walk(tree))
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                self.loads[node.id].append(node)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
                self.loads["." + node.attr].append(node)
        self._declared: dict[int, dict[str, str]] = {}  # scope id -> name -> "global" | "nonlocal"
        self._deferred: list[tuple[ast.AST, str, str, Binding]] = []
        self._pending: list[tuple[ast.AST, ast.AST, ast.AST | None]] = []
        self._visit_all(tree.body, tree, None)
        while self._pending:  # a worklist, not recursion: deep expressions stay cheap
            self._visit(*self._pending.pop())
        self._bind_declared()

    # -- queries -------------------------------------------------------------------------------

    def owner(self, name: str, scope: ast.AST) -> ast.AST | None:
        """The scope whose binding of ``name`` is seen from ``scope`` (LEGB; class scopes only
        for their own body); None: not bound in the module (a builtin, or undefined)."""
        current: ast.AST | None = scope
        first = True
        while current is not None:
            if (first or not isinstance(current, ast.ClassDef)) and self.bindings[id(current)].get(name):
                return current
            first = False
            current = self.scope_parent.get(id(current))
        return None

    def lookup(self, name: str, scope: ast.AST, mutations: bool = True) -> list[Binding] | None:
        """Bindings of ``name`` seen from ``scope``, with what container stores put into it unless
        ``mutations`` is False. None: not bound in the module (a builtin, or undefined)."""
        owner = self.owner(name, scope)
        if owner is None:
            return None
        return self.bindings[id(owner)][name] + (self.mutations.get(name, []) if mutations else [])

    def members(self, cls: ast.ClassDef, name: str) -> list[Binding]:
        return list(self.bindings[id(cls)].get(name, ()))

    def enclosing_class(self, fn: ast.AST) -> ast.ClassDef | None:
        """The class a def is a method of (its scope), else None."""
        scope = self.scope_parent.get(id(fn))
        return scope if isinstance(scope, ast.ClassDef) else None

    # -- construction --------------------------------------------------------------------------

    def _bind(self, scope: ast.AST, name: str, binding: Binding) -> None:
        how = self._declared.get(id(scope), {}).get(name)
        if how:
            self._deferred.append((scope, name, how, binding))
        else:
            self.bindings[id(scope)][name].append(binding)

    def _declare(self, scope: ast.AST, body: list[ast.stmt]) -> None:
        """Record the global/nonlocal declarations of a function or class body (not of nested ones)."""
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                kind = "global" if isinstance(node, ast.Global) else "nonlocal"
                self._declared.setdefault(id(scope), {}).update(dict.fromkeys(node.names, kind))
            elif not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(node))

    def _bind_declared(self) -> None:
        """Bindings made under a global (nonlocal) declaration, in the scope that owns the name:
        the module (the nearest enclosing function binding it, else the nearest enclosing one)."""
        for scope, name, how, binding in self._deferred:
            owner = self.tree
            if how == "nonlocal":
                functions = []
                current = self.scope_parent.get(id(scope))
                while current is not None and current is not self.tree:
                    if not isinstance(current, ast.ClassDef):
                        functions.append(current)
                    current = self.scope_parent.get(id(current))
                owner = next((f for f in functions if self.bindings[id(f)].get(name)),
                             functions[0] if functions else self.tree)
            self.bindings[id(owner)][name].append(binding)

    def _mark(self, node: ast.AST, scope: ast.AST, runs_in: ast.AST | None) -> None:
        self.scope[id(node)] = scope
        self.runs_in[id(node)] = runs_in

    def _visit_all(self, nodes, scope: ast.AST, runs_in: ast.AST | None) -> None:
        self._pending.extend((node, scope, runs_in) for node in nodes if node is not None)

    def _visit(self, node: ast.AST, scope: ast.AST, runs_in: ast.AST | None) -> None:
        self._mark(node, scope, runs_in)
        if isinstance(node, FUNCTIONS):
            self._visit_function(node, scope, runs_in)
            return
        if isinstance(node, ast.ClassDef):
            self._visit_class(node, scope, runs_in)
            return
        self._record(node, scope, runs_in)
        self._visit_all(ast.iter_child_nodes(node), scope, runs_in)

    def _visit_function(self, fn: ast.AST, scope: ast.AST, runs_in: ast.AST | None) -> None:
        self.functions.append(fn)
        self.scope_parent[id(fn)] = scope
        if isinstance(fn, DEFS):
            self._bind(scope, fn.name, Binding("def", fn))
            self._visit_all(fn.decorator_list, scope, runs_in)
            self._visit_all([fn.returns], scope, runs_in)
        args = fn.args
        self._visit_all(args.defaults + [d for d in args.kw_defaults if d is not None], scope, runs_in)
        if isinstance(fn, DEFS):
            self._declare(fn, fn.body)
        self._bind_params(fn)
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if arg is not None:
                self._mark(arg, fn, fn)
                self._visit_all([arg.annotation], scope, runs_in)
        if isinstance(fn, ast.Lambda):
            self.returns[id(fn)].append(fn.body)
            self._visit_all([fn.body], fn, fn)
        else:
            self._visit_all(fn.body, fn, fn)

    def _bind_params(self, fn: ast.AST) -> None:
        args = fn.args
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        for index, (arg, default) in enumerate(pairs):
            self.params[id(arg)] = Param(fn, arg.arg, default, index if index < len(positional) else None)
            self._bind(fn, arg.arg, Binding("param", arg))
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                self.params[id(arg)] = Param(fn, arg.arg, None, None, star=True)
                self._bind(fn, arg.arg, Binding("param", arg))

    def _visit_class(self, cls: ast.ClassDef, scope: ast.AST, runs_in: ast.AST | None) -> None:
        self.classes.append(cls)
        self.scope_parent[id(cls)] = scope
        self._bind(scope, cls.name, Binding("class", cls))
        self._visit_all(cls.decorator_list + cls.bases + [k.value for k in cls.keywords], scope, runs_in)
        self._declare(cls, cls.body)
        self._visit_all(cls.body, cls, runs_in)

    def _record(self, node: ast.AST, scope: ast.AST, runs_in: ast.AST | None) -> None:
        """Bindings, stores and returns made by one statement or expression node."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, Binding("value", node.value), scope)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            self._bind_target(node.target, Binding("value", node.value), scope)
        elif isinstance(node, ast.NamedExpr):
            self._bind_target(node.target, Binding("value", node.value), scope)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind_target(node.target, Binding("element", node.iter), scope)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind_target(node.optional_vars, Binding("value", node.context_expr), scope)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._bind_import(node, scope)
        elif isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)) and runs_in is not None:
            if not isinstance(node, ast.Return):
                self.lazy.add(id(runs_in))
            if node.value is not None:
                self.returns[id(runs_in)].append(node.value)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self._bind(scope, node.name, Binding("unknown"))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self._bind(scope, node.rest, Binding("unknown"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self._record_mutation(node, scope)

    def _bind_target(self, target: ast.expr, binding: Binding, scope: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, binding)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._bind_target(elt, Binding("element", binding.node) if binding.kind == "value" else binding, scope)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, binding, scope)
        elif isinstance(target, ast.Attribute):
            self.attr_stores[target.attr].append(binding)
        elif isinstance(target, ast.Subscript):
            self._store_into(target.value, binding)

    def _store_into(self, container: ast.expr, binding: Binding) -> None:
        """``container[k] = v`` or ``container.append(v)``: the container may now hold v."""
        while isinstance(container, ast.Subscript):
            container = container.value
        if isinstance(container, ast.Name):
            self.mutations[container.id].append(binding)
        elif isinstance(container, ast.Attribute):
            self.attr_stores[container.attr].append(binding)

    def _record_mutation(self, call: ast.Call, scope: ast.AST) -> None:
        method = call.func.attr
        values = list(call.args) + [k.value for k in call.keywords]
        if method in MUTATORS:
            for value in values:
                self._store_into(call.func.value, Binding("value", value))
        elif method in REGISTRARS and len(values) >= 2:
            name = call.args[0] if call.args else None
            store = Binding("value", values[1])
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.attr_stores[name.value].append(store)
            else:
                self.wildcard_stores.append(store)

    def _bind_import(self, node: ast.Import | ast.ImportFrom, scope: ast.AST) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                dotted = alias.name if alias.asname else alias.name.split(".")[0]
                self._bind(scope, alias.asname or alias.name.split(".")[0], Binding("import", None, dotted))
            elif alias.name != "*":
                module = "." * node.level + (node.module or "")
                self._bind(scope, alias.asname or alias.name, Binding("import", None, f"{module}.{alias.name}"))
