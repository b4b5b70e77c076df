"""The values the Python policy reasons about: what an expression of the candidate may denote
(:class:`Target`), and the small helpers that build and combine them."""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """kind: torch | torch_obj | torch_accessor | module | builtin | func | class | instance | super | native | kernel
    | tensor | value | scalar_fn | unknown. ``name``: dotted name (or the reason, for unknown)."""

    kind: str
    name: str = ""
    node: ast.AST | None = None


TENSOR, VALUE, SCALAR_FN = Target("tensor"), Target("value"), Target("scalar_fn")
NATIVE = Target("native")


def unknown(why: str) -> Target:
    return Target("unknown", why)


def module_target(dotted: str) -> Target:
    return Target("torch" if dotted.split(".")[0] == "torch" else "module", dotted)


def decorator_name(decorator: ast.expr) -> str:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def operands(expr: ast.expr) -> list[ast.expr]:
    """The leaves of a chain of operators (flattened without recursion: ``a + b + ... + z``)."""
    leaves, stack = [], [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp):
            stack += [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            stack.append(node.operand)
        elif isinstance(node, ast.Compare):
            stack += [node.left, *node.comparators]
        else:
            leaves.append(node)
    return leaves


def arithmetic(operands: set[Target]) -> set[Target]:
    """Result of an operator: a tensor if a tensor may take part; unknown stays unknown."""
    found = {VALUE}
    for t in operands:
        if t.kind in ("tensor", "torch_obj"):
            found.add(TENSOR)
        elif t.kind in ("unknown", "instance"):
            found.add(unknown(t.name or "an operand"))
    return found

