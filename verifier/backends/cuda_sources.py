"""Static extraction of the native sources of a KernelBench CUDA candidate, without running it.

A KernelBench CUDA candidate builds its kernel with ``torch.utils.cpp_extension.load_inline(
name=..., cpp_sources=..., cuda_sources=..., functions=[...])``. The parent (and the compile gate
on a machine without a GPU) must not execute candidate code, so this module reads the call from
the AST: string literals, module-level string variables, lists/tuples and ``+`` of those. It
then rebuilds the two translation units load_inline would compile (same preludes, same pybind
module), so that nvcc/g++ see what torch's build would see.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from verifier.native_sources import module_constants

CUDA_PRELUDE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
CPP_PRELUDE = "#include <torch/extension.h>\n"


class CandidateFormatError(ValueError):
    """The candidate does not follow the backend's format; the message says what to change."""


@dataclass(frozen=True)
class InlineExtension:
    """One load_inline call, resolved to text."""

    name: str
    cpp_sources: str
    cuda_sources: str
    functions: tuple[str, ...]
    line: int

    def cuda_unit(self) -> str:
        return CUDA_PRELUDE + self.cuda_sources

    def cpp_unit(self) -> str:
        """The host translation unit load_inline generates: declarations plus the pybind module."""
        defs = "".join(f'  m.def("{f}", torch::wrap_pybind_function({f}), "{f}");\n' for f in self.functions)
        module = f"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{defs}}}\n" if defs else ""
        return CPP_PRELUDE + self.cpp_sources + module


_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "functions")


def _resolve_text(node: ast.expr | None, names: dict[str, ast.expr], what: str, depth: int = 0) -> str:
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return ""
    if depth > 20:
        raise CandidateFormatError(f"{what}: variables refer to each other too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return _resolve_text(names[node.id], names, what, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return "\n".join(_resolve_text(e, names, what, depth + 1) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _resolve_text(node.left, names, what, depth + 1) + _resolve_text(node.right, names, what, depth + 1)
    raise CandidateFormatError(
        f"line {getattr(node, 'lineno', '?')}: {what} must be a string literal or a module-level string "
        "variable (it is read without running the candidate)")


def _resolve_names(node: ast.expr | None, names: dict[str, ast.expr]) -> tuple[str, ...]:
    if node is None:
        return ()
    if isinstance(node, ast.Name) and node.id in names:
        return _resolve_names(names[node.id], names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)  # type: ignore[union-attr]
    raise CandidateFormatError(f"line {node.lineno}: functions= must be a list of string literals")


def _is_load_inline(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "load_inline"


def extract_inline_extensions(candidate_source: str) -> tuple[InlineExtension, ...]:
    """Every load_inline call of the candidate, resolved statically; raise CandidateFormatError."""
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError as exc:
        raise CandidateFormatError(f"line {exc.lineno}: Python syntax error: {exc.msg}") from None
    names = module_constants(tree)
    found = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_load_inline(n)):
        args = dict(zip(_POSITIONAL, call.args))
        args.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
        name_node = args.get("name")
        name = _resolve_text(name_node, names, "name") if name_node is not None else "inline_ext"
        cuda = _resolve_text(args.get("cuda_sources"), names, "cuda_sources")
        cpp = _resolve_text(args.get("cpp_sources"), names, "cpp_sources")
        found.append(InlineExtension(name=name or "inline_ext", cpp_sources=cpp, cuda_sources=cuda,
                                     functions=_resolve_names(args.get("functions"), names), line=call.lineno))
    if not found:
        raise CandidateFormatError(
            "no torch.utils.cpp_extension.load_inline(...) call found: build the CUDA kernel with "
            "load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...]) and call it from ModelNew")
    if not any(ext.cuda_sources.strip() for ext in found):
        raise CandidateFormatError("load_inline has no cuda_sources: the kernel must be CUDA code")
    return tuple(found)
