"""Static extraction of the native sources a candidate hands to a loader.

The compile gate builds these before any candidate code runs (the sandbox forbids exec once the
candidate is loaded), and the hack gate scans their C/C++ tokens. A source must be a string
literal, a module-level string constant, an f-string or ``+`` concatenation of those, or a
parameter of a build helper that its call sites bind to one (:mod:`verifier.native_args`). The
loaders refuse at run time anything the compile gate did not build from exactly this text.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from verifier.native_args import BoundArgs, Reader
from verifier.static_values import SourceExtractionError, module_constants, resolve_static

__all__ = ["NativeSource", "SourceExtractionError", "extract", "loader_calls", "module_constants", "resolve_static"]

FAST_LOADER = ("verifier.cpu_native", "load_c")
INLINE_LOADER = ("torch.utils.cpp_extension", "load_inline")
INLINE_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions")  # torch's order


@dataclass(frozen=True)
class NativeSource:
    loader: str  # "load_c" | "load_inline"
    line: int
    code: str  # the C/C++ text (for load_inline: cpp_sources, then cuda_sources, joined)
    inline_args: tuple[tuple[str, object], ...] = ()  # load_inline keyword arguments (resolved)
    via: tuple[int, ...] = ()  # the build-helper call sites that bound its arguments, innermost first

    @property
    def where(self) -> str:
        return f"line {self.line}" + "".join(f" via line {n}" for n in self.via)


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


def loader_calls(tree: ast.Module) -> list[tuple[ast.Call, str]]:
    """(call, "load_c" | "load_inline") for every loader call of the candidate, in source order."""
    names = loader_names(tree)
    names.setdefault("torch.utils.cpp_extension.load_inline", "load_inline")
    calls = [(node, names.get(_call_name(node.func))) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return sorted(((c, loader) for c, loader in calls if loader), key=lambda pair: (pair[0].lineno, pair[0].col_offset))


def extract(source: str) -> tuple[NativeSource, ...]:
    """All loader calls of a candidate with their statically resolved sources: one per call path
    through build helpers (see verifier.native_args), identical builds once."""
    tree = ast.parse(source)
    bound = BoundArgs(tree)
    found: dict[tuple, NativeSource] = {}
    for call, loader in loader_calls(tree):
        try:
            resolved = bound.per_call_path(call, lambda read, c=call, kind=loader: _read_call(c, kind, read))
        except SourceExtractionError as exc:
            raise SourceExtractionError(f"line {call.lineno}: {loader}: {exc} (it is read without running the "
                                        "candidate, so that the compile gate can build it)") from None
        for (code, inline_args), via in resolved:
            key = (loader, code, repr(inline_args))
            found.setdefault(key, NativeSource(loader, call.lineno, code, inline_args, via))
    return tuple(found.values())


def _read_call(call: ast.Call, loader: str, read: Reader) -> tuple[str, tuple[tuple[str, object], ...]]:
    """(C/C++ text, load_inline's keyword arguments) of one loader call."""
    if loader == "load_c":
        if not call.args:
            raise SourceExtractionError("load_c needs the source as its first argument")
        code = _argument("source", call.args[0], read)
        if not isinstance(code, str):
            raise SourceExtractionError("load_c source must be a string")
        return code, ()
    kwargs = inline_kwargs(call, read)
    parts = [kwargs.get("cpp_sources") or "", kwargs.get("cuda_sources") or ""]
    code = "\n".join(text for text in ("\n".join(p) if isinstance(p, list) else str(p) for p in parts) if text)
    return code, tuple(sorted(kwargs.items(), key=lambda kv: kv[0]))


def inline_kwargs(call: ast.Call, read: Reader) -> dict[str, object]:
    """load_inline's arguments by name (positional ones in torch's order, ``**`` of a static dict)."""
    kwargs: dict[str, object] = {}
    for keyword in call.keywords:
        value = _argument(keyword.arg or "**kwargs", keyword.value, read)
        if keyword.arg is None and not (isinstance(value, dict) and all(isinstance(k, str) for k in value)):
            raise SourceExtractionError(f"**{ast.unparse(keyword.value)} is not a dict with string keys")
        kwargs.update(value if keyword.arg is None else {keyword.arg: value})
    positional: list[object] = []
    for arg in call.args:
        starred = isinstance(arg, ast.Starred)
        value = _argument(INLINE_POSITIONAL[min(len(positional), 4)], arg.value if starred else arg, read)
        if starred and not isinstance(value, list):
            raise SourceExtractionError(f"*{ast.unparse(arg.value)} is not a list")
        positional += value if starred else [value]
    kwargs.update(zip(INLINE_POSITIONAL, positional))
    return kwargs


def _argument(name: str, node: ast.expr, read: Reader) -> object:
    try:
        return read(node)
    except SourceExtractionError as exc:
        wanted = "= must be a list of string literals" if name == "functions" else " must be a string literal"
        raise SourceExtractionError(f"{name}{wanted}, a module-level constant or a build-helper parameter bound to "
                                    f"one: {exc}") from None
