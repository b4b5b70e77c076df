"""The candidate's classes as the resolver sees them: bases (candidate and torch), members along
bases and subclasses, attribute stores, properties, and what calling an object of a class gives."""

from __future__ import annotations

import ast

from verifier.gates.hack_py_names import NN_CONTAINERS
from verifier.gates.hack_py_symbols import Binding, Symbols
from verifier.gates.hack_py_targets import TENSOR, VALUE, Target, decorator_name, unknown


class ClassModel:
    """Mixed into :class:`verifier.gates.hack_py_resolve.Resolver`, whose ``symbols``, ``resolve``,
    ``resolve_binding`` and ``returns_of`` it uses."""

    symbols: Symbols
    _memo: dict

    def _member(self, cls: ast.ClassDef, attr: str, skip_self: bool) -> set[Target]:
        """``obj.attr`` for an object of a candidate class: class members (defs, properties, class
        attributes) along the bases and subclasses, every store to ``.attr``, torch bases."""
        found: set[Target] = set()
        classes = self.mro(cls)[1:] if skip_self else self.related(cls)
        for owner in classes:
            for binding in self.symbols.members(owner, attr):
                found |= self._member_binding(binding)
        if not skip_self:
            for binding in self.symbols.attr_stores.get(attr, []) + self.symbols.wildcard_stores:
                found |= self.resolve_binding(binding)
        for base in self.torch_bases(cls):
            if base not in NN_CONTAINERS:
                found |= {TENSOR, Target("torch_obj", f"{base}.{attr}")}
            elif not found:
                found.add(unknown(f"nn.Module attribute {attr}"))
        return found or {unknown(f"attribute {attr} is never assigned")}

    def _member_binding(self, binding: Binding) -> frozenset[Target]:
        fn = binding.node
        if binding.kind == "def" and any(decorator_name(d) in ("property", "cached_property") for d in fn.decorator_list):
            return frozenset(r for ret in self.symbols.returns.get(id(fn), []) for r in self.resolve(ret)) \
                or frozenset({VALUE})
        return self.resolve_binding(binding)

    def mro(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The candidate classes along ``cls``'s bases, depth first, each once (``cls`` first)."""
        cache = self.__dict__.setdefault("_mro_cache", {})
        if id(cls) in cache:
            return list(cache[id(cls)])
        order: list[ast.ClassDef] = []
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if any(c is current for c in order):
                continue
            order.append(current)
            stack.extend(t.node for base in current.bases for t in self.resolve(base) if t.kind == "class")
        if all(self._key(base) in self._memo for c in order for base in c.bases):  # final, not mid-cycle
            cache[id(cls)] = tuple(order)
        return order

    def related(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """Bases and subclasses (``self`` in a base-class method may be a subclass object)."""
        found = self.mro(cls)
        for other in self.symbols.classes:
            if any(c is cls for c in self.mro(other)) and not any(c is other for c in found):
                found.append(other)
        return found

    def torch_bases(self, cls: ast.ClassDef) -> set[str]:
        return {t.name for c in self.mro(cls) for base in c.bases for t in self.resolve(base) if t.kind == "torch"}

    def _instance_call(self, cls: ast.ClassDef) -> set[Target]:
        found: set[Target] = set()
        for owner in self.related(cls):
            for member in ("__call__", "forward"):
                for binding in self.symbols.members(owner, member):
                    for target in self.resolve_binding(binding):
                        found |= self.returns_of(target.node) if target.kind == "func" else {unknown(member)}
        if self.torch_bases(cls) - NN_CONTAINERS:
            found.add(TENSOR)
        return found or {unknown(f"calling a {cls.name} object")}
