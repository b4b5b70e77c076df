"""What an expression of the candidate may evaluate to, read from the AST (never executed).

:meth:`Resolver.resolve` maps an expression to a set of :class:`Target` s: a torch API, an instance
of a torch class (an ``nn.Linear`` object), another module's member (``math.prod``), a builtin, one
of the candidate's functions, classes or instances, a loaded native library, a Triton kernel, a
tensor, a plain Python value, or ``unknown`` (with the reason). Names follow the symbol table
through aliases and module constants; containers are transparent (``OPS["relu"]`` may be any value
stored in ``OPS``); attributes of the candidate's objects follow every store to that attribute
name; a call of a candidate function gives what its ``return`` s give. The result over-approximates:
an expression may resolve to more than it can be, never less, except where ``unknown`` says so.
"""

from __future__ import annotations

import ast

from verifier.gates.hack_py_classes import ClassModel
from verifier.gates.hack_py_names import (CARRYING_BUILTINS, LOADERS, NN_ACCESSORS, NN_CARRYING, NN_VALUE_ATTRS,
                                          TENSOR_VALUE_ATTRS, TENSOR_VALUE_METHODS, TORCH_VALUE_RESULTS,
                                          VALUE_BUILTINS)
from verifier.gates.hack_py_refs import STAR, argument, call_sites
from verifier.gates.hack_py_symbols import Binding, Symbols
from verifier.gates.hack_py_targets import (NATIVE, SCALAR_FN, TENSOR, VALUE, Target, arithmetic, decorator_name,
                                            module_target, operands, unknown)

MAX_STEPS = 200_000


class TooComplex(Exception):
    """The candidate's name graph is too large or too deep to resolve (the policy fails closed)."""


class Resolver(ClassModel):
    def __init__(self, symbols: Symbols, kernels: set[int]) -> None:
        self.symbols = symbols
        self.kernels = kernels  # ids of Triton kernel defs
        self._memo: dict[int, frozenset[Target]] = {}
        self._active: set[object] = set()
        self._provisional: dict[object, frozenset[Target]] = {}
        self._hits: set[object] = set()  # active keys re-entered (cycle heads) below the current frame
        self._created: list[list[object]] = [[]]  # provisional entries made in each open frame
        self._steps = 0

    # -- entry point ---------------------------------------------------------------------------

    def resolve(self, expr: ast.AST) -> frozenset[Target]:
        """Targets of ``expr``, memoised. A cycle (``x = f(x)``) iterates its head to a fixpoint
        from the empty set; what was computed inside the head's last round is final with it. The
        loads of one name in one scope share a single entry."""
        key = self._key(expr)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            self._hits.add(key)
            return self._provisional.get(key, frozenset())
        outer_hits, self._hits = self._hits, set()
        self._active.add(key)
        try:
            while True:
                self._count(expr)
                self._created.append([])
                result = frozenset(self._resolve(expr))
                created = self._created.pop()
                if key not in self._hits or self._provisional.get(key) == result:
                    break
                self._provisional[key] = result
                self._hits.discard(key)
        finally:
            self._active.discard(key)
        inner_hits = self._hits - {key}
        self._hits = outer_hits | inner_hits
        if inner_hits:  # depends on a frame still open: provisional until that frame is final
            self._provisional[key] = result
            self._created[-1].extend([*created, key])
        else:
            self._memo[key] = result
            self._provisional.pop(key, None)
            for inner in created:
                if inner in self._provisional:
                    self._memo[inner] = self._provisional.pop(inner)
        return result

    def _key(self, expr: ast.AST) -> object:
        if isinstance(expr, ast.Name):
            owner = self.symbols.owner(expr.id, self.symbols.scope.get(id(expr), self.symbols.tree))
            return ("name", expr.id, id(owner))
        return id(expr)

    def _count(self, expr: ast.AST) -> None:
        self._steps += 1
        if self._steps > MAX_STEPS:
            raise TooComplex(f"line {getattr(expr, 'lineno', '?')}")

    def resolve_binding(self, binding: Binding) -> frozenset[Target]:
        if binding.kind == "value":
            return self.resolve(binding.node)
        if binding.kind == "element":
            return frozenset(self._element(t) for t in self.resolve(binding.node))
        if binding.kind == "def":
            return self._def_targets(binding.node)
        if binding.kind == "class":
            return frozenset({Target("class", binding.node.name, binding.node)})
        if binding.kind == "import":
            return frozenset({module_target(binding.dotted)})
        if binding.kind == "param":
            return self._param(binding.node)
        return frozenset({unknown("a bound name")})

    # -- expressions ---------------------------------------------------------------------------

    def _resolve(self, expr: ast.AST) -> set[Target]:
        if isinstance(expr, ast.Name):
            return self._name(expr)
        if isinstance(expr, ast.Attribute):
            return {r for t in self.resolve(expr.value) for r in self._attribute(t, expr.attr, expr)}
        if isinstance(expr, ast.Subscript):
            return {self._element(t) for t in self.resolve(expr.value)}
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return {VALUE}.union(*(self.resolve(e) for e in expr.elts))
        if isinstance(expr, ast.Dict):
            return {VALUE}.union(*(self.resolve(v) for v in expr.values))
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return {VALUE} | self.resolve(expr.elt)
        if isinstance(expr, ast.DictComp):
            return {VALUE} | self.resolve(expr.value)
        if isinstance(expr, (ast.Starred, ast.NamedExpr)):
            return set(self.resolve(expr.value))
        if isinstance(expr, ast.IfExp):
            return set(self.resolve(expr.body) | self.resolve(expr.orelse))
        if isinstance(expr, ast.BoolOp):
            return set().union(*(self.resolve(v) for v in expr.values))
        if isinstance(expr, ast.Lambda):
            return {Target("func", "<lambda>", expr)}
        if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return arithmetic(set().union(*(self.resolve(o) for o in operands(expr))))
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Slice)):
            return {VALUE}
        return {unknown(f"a {type(expr).__name__} expression")}

    def _name(self, expr: ast.Name) -> set[Target]:
        bindings = self.symbols.lookup(expr.id, self.symbols.scope.get(id(expr), self.symbols.tree))
        if bindings is None:
            return {Target("builtin", expr.id)}
        return set().union(*(self.resolve_binding(b) for b in bindings))

    def _def_targets(self, fn: ast.AST) -> frozenset[Target]:
        if id(fn) in self.kernels:
            return frozenset({Target("kernel", fn.name, fn)})
        return frozenset({Target("func", fn.name, fn)})

    def _param(self, arg: ast.arg) -> frozenset[Target]:
        """A parameter: self/cls of a method, else what its call sites pass (when every reference
        to the function is a call), its default, and unknown where callers cannot all be seen."""
        param = self.symbols.params[id(arg)]
        fn = param.function
        cls = self.symbols.enclosing_class(fn)
        decorators = {decorator_name(d) for d in getattr(fn, "decorator_list", ())}
        if cls is not None and param.first and "staticmethod" not in decorators:
            kind = "class" if "classmethod" in decorators or fn.name == "__new__" else "instance"
            return frozenset({Target(kind, cls.name, cls)})
        why = unknown(f"parameter {arg.arg}")
        if param.star:
            return frozenset({VALUE, why})
        found = {TENSOR, why} if getattr(fn, "name", "") == "forward" else set()  # forward's inputs
        sites = call_sites(fn, self.symbols, self.mro)
        for call in sites if sites is not None else ():
            for shift in self.shifts(call, cls is not None and "staticmethod" not in decorators):
                passed = argument(call, param, shift)
                found |= {why} if passed is STAR else self.resolve(passed) if passed is not None else set()
        if sites is None:
            found.add(why)  # annotations are not enforced: never used to narrow
        if param.default is not None:
            found |= self.resolve(param.default)
        return frozenset(found or {why})

    def shifts(self, call: ast.Call, bound: bool) -> tuple[int, ...]:
        """Positional parameters bound before the call's arguments: 1 for self of a method called
        on an object (or ``C(...)`` for ``__init__``), 0 when called on the class."""
        if not bound:
            return (0,)
        if isinstance(call.func, ast.Attribute) and any(t.kind == "class" for t in self.resolve(call.func.value)):
            return (0, 1)
        return (1,)

    def _element(self, target: Target) -> Target:
        """One element (iteration or subscript) of a value of this target."""
        if target.kind == "instance":
            return unknown(f"an element of a {target.name} object")
        if target.kind in ("scalar_fn", "builtin", "class"):
            return VALUE if target.kind != "class" else target
        return target

    # -- attributes ----------------------------------------------------------------------------

    def _attribute(self, base: Target, attr: str, node: ast.AST) -> set[Target]:
        kind = base.kind
        if kind in ("torch", "module"):
            return {module_target(f"{base.name}.{attr}")}
        if kind == "torch_obj":
            if not base.name.rsplit(".", 1)[-1][:1].isupper():  # a parameter, submodule or method of one
                return self._attribute(TENSOR, attr, node)
            if attr in NN_VALUE_ATTRS or attr in TENSOR_VALUE_ATTRS:
                return {VALUE}
            if attr in NN_ACCESSORS:
                return {Target("torch_accessor", base.name)}
            return {TENSOR, Target("torch_obj", f"{base.name}.{attr}")}
        if kind == "tensor":
            return {VALUE} if attr in TENSOR_VALUE_ATTRS else {SCALAR_FN} if attr in TENSOR_VALUE_METHODS else {TENSOR}
        if kind in ("native", "kernel", "unknown"):
            return {base}
        if kind in ("class", "instance"):
            return self._member(base.node, attr, skip_self=False)
        if kind == "super":
            return self._member(base.node, attr, skip_self=True)
        return {VALUE}  # values, builtins, functions: plain Python attributes

    # -- calls ---------------------------------------------------------------------------------

    def _call(self, call: ast.Call) -> set[Target]:
        found: set[Target] = set()
        for callee in self.resolve(call.func):
            found |= self._call_result(callee, call)
        return found

    def _carried(self, call: ast.Call) -> set[Target]:
        return set().union(*(self.resolve(a) for a in [*call.args, *(k.value for k in call.keywords)]))

    def _call_result(self, callee: Target, call: ast.Call) -> set[Target]:
        kind, name = callee.kind, callee.name
        if kind == "torch":
            return self._torch_result(name, call)
        if kind == "module":
            if name in LOADERS:
                return {NATIVE}
            if name.startswith(("functools.", "typing.", "dataclasses.")):
                return {VALUE} | self._carried(call)
            return {VALUE}
        if kind == "builtin":
            return self._builtin_result(name, call)
        if kind == "func":
            return self.returns_of(callee.node)
        if kind == "class":
            return {Target("instance", name, callee.node)}
        if kind == "instance":
            return self._instance_call(callee.node)
        if kind in ("torch_obj", "native", "tensor"):
            return {TENSOR}
        if kind == "torch_accessor":
            return {TENSOR, Target("torch_obj", name)}
        if kind in ("value", "scalar_fn", "kernel"):
            return {VALUE}
        return {callee if kind == "unknown" else unknown(f"the result of calling {name or kind}")}

    def _torch_result(self, name: str, call: ast.Call) -> set[Target]:
        last = name.rsplit(".", 1)[-1]
        if name in LOADERS:
            return {NATIVE}
        if name in TORCH_VALUE_RESULTS:
            return {VALUE}
        if name.startswith("torch.nn.Parameter"):
            return {TENSOR} | (self._carried(call) if name != "torch.nn.Parameter" else set())
        if name.startswith("torch.nn.") and last[:1].isupper():
            carried = self._carried(call) if name in NN_CARRYING else set()
            return {Target("torch_obj", name)} | carried
        return {TENSOR}

    def _builtin_result(self, name: str, call: ast.Call) -> set[Target]:
        if name == "super" and call.args:  # super(ModelNew, self): the class named, as KernelBench writes it
            classes = [t for t in self.resolve(call.args[0]) if t.kind == "class"]
            return {Target("super", t.name, t.node) for t in classes} or {unknown("super(...)")}
        if name == "super":
            fn = self.symbols.runs_in.get(id(call))
            cls = self.symbols.enclosing_class(fn) if fn is not None else None
            return {Target("super", cls.name, cls)} if cls is not None else {unknown("super()")}
        if name in VALUE_BUILTINS:
            return {VALUE}
        if name in CARRYING_BUILTINS:
            return {VALUE} | self._carried(call)
        return {unknown(f"{name}()")}

    def returns_of(self, fn: ast.AST) -> set[Target]:
        returns = self.symbols.returns.get(id(fn), [])
        return set().union(*(self.resolve(r) for r in returns)) if returns else {VALUE}


