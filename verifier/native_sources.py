"""Static extraction of the native sources a candidate hands to a loader.

The compile gate builds these before any candidate code runs (the sandbox forbids exec once the
candidate is loaded), and the hack gate scans their C/C++ tokens. A source must be a string
literal, a module-level string constant, or a ``+`` concatenation of those.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FAST_LOADER = ("verifier.cpu_native", "load_c")
INLINE_LOADER = ("torch.utils.cpp_extension", "load_inline")
INLINE_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "functions")


class SourceExtractionError(ValueError):
    """A loader call whose source cannot be resolved statically (line number in the message)."""


@dataclass(frozen=True)
class NativeSource:
    loader: str  # "load_c" | "load_inline"
    line: int
    code: str  # the C/C++ text (for load_inline: cpp_sources, then cuda_sources, joined)
    inline_args: tuple[tuple[str, object], ...] = ()  # load_inline keyword arguments (resolved)


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
    """Resolve str/list/tuple/number literals, names of module constants, and str concatenation."""
    if depth > 20:
        raise SourceExtractionError("constant nesting too deep")
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in consts:
        return resolve_static(consts[node.id], consts, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [resolve_static(e, consts, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {resolve_static(k, consts, depth + 1): resolve_static(v, consts, depth + 1)
                for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = resolve_static(node.left, consts, depth + 1), resolve_static(node.right, consts, depth + 1)
        if type(left) is type(right) and isinstance(left, (str, list)):
            return left + right
    raise SourceExtractionError(f"line {getattr(node, 'lineno', '?')}: not a static constant")


def loader_names(tree: ast.Module) -> dict[str, str]:
    """Local names bound to the loaders: {"load_c": "load_c", "cpp_extension.load_inline": ...}."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in (FAST_LOADER[0], INLINE_LOADER[0]):
            for alias in node.names:
                if alias.name in (FAST_LOADER[1], INLINE_LOADER[1]):
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.utils":
            for alias in node.names:
                if alias.name == "cpp_extension":
                    names[f"{alias.asname or alias.name}.load_inline"] = "load_inline"
    return names


def _call_name(func: ast.expr) -> str:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def extract(source: str) -> tuple[NativeSource, ...]:
    """All loader calls of a candidate with their statically resolved sources."""
    tree = ast.parse(source)
    consts, names = module_constants(tree), loader_names(tree)
    names.setdefault("torch.utils.cpp_extension.load_inline", "load_inline")
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        loader = names.get(_call_name(node.func))
        if loader is None:
            continue
        try:
            if loader == "load_c":
                if not node.args:
                    raise SourceExtractionError("load_c needs the source as its first argument")
                code = resolve_static(node.args[0], consts)
                if not isinstance(code, str):
                    raise SourceExtractionError("load_c source must be a string")
                found.append(NativeSource("load_c", node.lineno, code))
            else:
                kwargs = {kw.arg: resolve_static(kw.value, consts) for kw in node.keywords if kw.arg}
                for name, arg in zip(INLINE_POSITIONAL, node.args):
                    kwargs[name] = resolve_static(arg, consts)
                parts = [kwargs.get("cpp_sources") or "", kwargs.get("cuda_sources") or ""]
                code = "\n".join(text for text in ("\n".join(p) if isinstance(p, list) else str(p) for p in parts) if text)
                found.append(NativeSource("load_inline", node.lineno, code, tuple(sorted(kwargs.items(), key=lambda kv: kv[0]))))
        except SourceExtractionError as exc:
            raise SourceExtractionError(f"line {node.lineno}: {loader}: {exc} (pass a string literal or a "
                                        f"module-level string constant so the compile gate can build it)") from None
    return tuple(found)
