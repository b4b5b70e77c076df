"""What the Python checks share: the parsed candidate, its symbol table, the name resolver and the
per-call phase, plus the queries checks ask of them (maximal name chains and what they denote)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from verifier.gates.hack_py_phases import Phases, classify
from verifier.gates.hack_py_resolve import Resolver
from verifier.gates.hack_py_targets import Target
from verifier.gates.hack_py_symbols import Symbols


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    line: int = 0

    def line_text(self) -> str:
        return f"{self.check} (line {self.line}): {self.message}" if self.line else f"{self.check}: {self.message}"


@dataclass
class PyContext:
    tree: ast.Module
    symbols: Symbols
    resolver: Resolver
    phases: Phases
    task_dtype: str = "float32"
    extra_imports: frozenset[str] = frozenset()  # the backend's kernel language (triton), see Backend
    kernels: set[int] = field(default_factory=set)  # ids of kernel-language defs (@triton.jit)
    _all_chains: list | None = field(default=None, repr=False)
    _per_call_chains: list | None = field(default=None, repr=False)

    @classmethod
    def build(cls, source: str, task_dtype: str = "float32",
              extra_imports: frozenset[str] = frozenset()) -> "PyContext":
        return cls.from_tree(ast.parse(source), task_dtype, extra_imports)

    @classmethod
    def from_tree(cls, tree: ast.Module, task_dtype: str = "float32",
                  extra_imports: frozenset[str] = frozenset()) -> "PyContext":
        symbols = Symbols(tree)
        kernels = _kernel_defs(tree, frozenset(extra_imports))
        resolver = Resolver(symbols, kernels)
        phases = classify(symbols, resolver, kernels)
        return cls(tree, symbols, resolver, phases, task_dtype, frozenset(extra_imports), kernels)

    def resolve(self, node: ast.AST) -> frozenset[Target]:
        return self.resolver.resolve(node)

    def names(self, node: ast.AST) -> set[str]:
        """Dotted names of the torch/module/builtin things ``node`` may denote."""
        return {t.name for t in self.resolve(node) if t.kind in ("torch", "module", "builtin")}

    def chains(self, nodes: Iterable[ast.AST]) -> Iterator[tuple[ast.AST, str]]:
        """(node, dotted name) for every maximal name/attribute load among ``nodes`` that may
        denote a torch or other module member (``F.relu``, an alias of it, ``OPS`` holding it)."""
        for node in nodes:
            if not isinstance(node, (ast.Name, ast.Attribute)) or isinstance(node.ctx, ast.Store):
                continue
            parent = self.symbols.parent.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue
            for target in self.resolve(node):
                if target.kind in ("torch", "module"):
                    yield node, target.name

    def patches_module(self, target: ast.expr, container: bool) -> bool:
        """Whether a store through ``target`` (``X.attr = v``; ``X[k] = v`` or ``X.append(v)`` when
        ``container``) writes into an imported module's object rather than the candidate's own.
        A container the candidate built (a literal holding torch functions) is its own."""
        found = self.resolve(target.value)
        owned = any(t.kind in ("torch", "module") for t in found)
        return owned and not (container and any(t.kind == "value" for t in found))

    @property
    def nodes(self) -> list[ast.AST]:
        return self.symbols.nodes

    def per_call_nodes(self) -> tuple[ast.AST, ...]:
        return self.phases.nodes

    def all_chains(self) -> list[tuple[ast.AST, str]]:
        if self._all_chains is None:
            self._all_chains = list(self.chains(self.nodes))
        return self._all_chains

    def per_call_chains(self) -> list[tuple[ast.AST, str]]:
        if self._per_call_chains is None:
            self._per_call_chains = list(self.chains(self.phases.nodes))
        return self._per_call_chains


def dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(dotted(node.func) + "()")
    elif isinstance(node, ast.Subscript):
        parts.append(dotted(node.value) + "[]")
    else:
        parts.append("?")
    return ".".join(reversed(parts))


def _kernel_defs(tree: ast.Module, extra_imports: frozenset[str]) -> set[int]:
    """Top-level defs decorated from an allowed kernel-language module (@triton.jit, @triton.autotune)."""
    roots = {name.split(".")[0] for name in extra_imports}
    aliases = {a.asname or a.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import)
               for a in node.names if a.name.split(".")[0] in roots}
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.decorator_list and all(
                dotted(d.func if isinstance(d, ast.Call) else d).split(".")[0] in aliases for d in node.decorator_list):
            found.add(id(node))
    return found
