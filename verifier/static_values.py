"""The value of a candidate's Python expression read from its AST, never by running it.

What can be read: str/number/bool/None literals, lists, tuples and dicts of those, ``+``
concatenation of strings or lists, and f-strings whose fields are such values. Names are
resolved by the caller (module constants here; helper parameters bound at their call sites in
the caller). Anything else is computed at run time and raises
:class:`SourceExtractionError` naming the line.
"""

from __future__ import annotations

import ast
from typing import Callable

MAX_DEPTH = 40
SCALARS = (str, int, float, bool, type(None))

NameValue = Callable[[ast.Name, int], object]  # (name load, depth) -> its value


class SourceExtractionError(ValueError):
    """A loader call whose source cannot be resolved statically (line number in the message)."""


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = expr`` assignments (read statically, never executed)."""
    consts: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            consts[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            consts[node.target.id] = node.value
    return consts


def resolve_static(node: ast.expr, consts: dict[str, ast.expr], depth: int = 0):
    """Resolve literals, names of module constants, concatenations and f-strings of those."""

    def constant(name: ast.Name, depth: int):
        if name.id not in consts:
            raise not_static(name, f"{name.id} is not a module-level constant")
        return static_value(consts[name.id], constant, depth + 1)

    return static_value(node, constant, depth)


def static_value(node: ast.expr, name_value: NameValue, depth: int = 0):
    """The value of ``node``; names go to ``name_value``."""
    if depth > MAX_DEPTH:
        raise SourceExtractionError(f"line {_line(node)}: constant nesting too deep")
    if isinstance(node, ast.Constant) and isinstance(node.value, SCALARS):
        return node.value
    if isinstance(node, ast.Name):
        return name_value(node, depth)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [static_value(e, name_value, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {static_value(k, name_value, depth + 1): static_value(v, name_value, depth + 1)
                for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = static_value(node.left, name_value, depth + 1), static_value(node.right, name_value, depth + 1)
        if type(left) is type(right) and isinstance(left, (str, list)):
            return left + right
        raise not_static(node, "only strings or lists are concatenated statically")
    if isinstance(node, ast.JoinedStr):
        return "".join(str(static_value(part, name_value, depth + 1)) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return _formatted(node, name_value, depth)
    raise not_static(node, _kind(node))


def _formatted(node: ast.FormattedValue, name_value: NameValue, depth: int) -> str:
    """One ``{field!conversion:spec}`` of an f-string."""
    value = static_value(node.value, name_value, depth + 1)
    if not isinstance(value, SCALARS):
        raise not_static(node, "an f-string field must be a string or a number")
    if node.conversion in (ord("r"), ord("a")):
        value = repr(value) if node.conversion == ord("r") else ascii(value)
    elif node.conversion == ord("s"):
        value = str(value)
    spec = static_value(node.format_spec, name_value, depth + 1) if node.format_spec is not None else ""
    try:
        return format(value, spec)
    except (TypeError, ValueError) as exc:
        raise not_static(node, f"format spec {spec!r}: {exc}") from None


def not_static(node: ast.AST, why: str) -> SourceExtractionError:
    """The error for an expression that has no static value: its line, its text and why."""
    return SourceExtractionError(f"line {_line(node)}: {snippet(node)} is not a static constant ({why})")


def snippet(node: ast.AST, limit: int = 48) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return f"`{text if len(text) <= limit else text[:limit - 3] + '...'}`"


def _kind(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return "a call, computed at run time"
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return "an attribute or item, read at run time"
    return f"a {type(node).__name__} expression"


def _line(node: ast.AST) -> object:
    return getattr(node, "lineno", "?")
