"""Static extraction of the native sources of a KernelBench CUDA candidate, without running it.

A KernelBench CUDA candidate builds its kernel with ``torch.utils.cpp_extension.load_inline(
name=..., cpp_sources=..., cuda_sources=..., functions=[...])``. The parent (and the compile gate
on a machine without a GPU) must not execute candidate code, so this module reads the call from
the AST: string literals, module-level string variables, lists/tuples, f-strings and ``+`` of
those, and build-helper parameters bound to them (see verifier.native_args). It
then rebuilds the two translation units load_inline would compile (same preludes, same pybind
module), so that nvcc/g++ see what torch's build would see.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from verifier.native_args import BoundArgs, Reader
from verifier.native_sources import inline_kwargs
from verifier.static_values import SourceExtractionError

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


def _text(kwargs: dict[str, object], what: str) -> str:
    value = kwargs.get(what)
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if not isinstance(value, str):
        raise CandidateFormatError(f"{what} must be a string or a list of strings")
    return value


def _names(kwargs: dict[str, object]) -> tuple[str, ...]:
    value = kwargs.get("functions")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise CandidateFormatError("functions= must be a list of string literals")


def _extension(call: ast.Call, read: Reader) -> InlineExtension:
    try:
        kwargs = inline_kwargs(call, read)
    except SourceExtractionError as exc:
        raise CandidateFormatError(str(exc)) from None
    name = _text(kwargs, "name") if "name" in kwargs else "inline_ext"
    return InlineExtension(name=name or "inline_ext", cpp_sources=_text(kwargs, "cpp_sources"),
                           cuda_sources=_text(kwargs, "cuda_sources"), functions=_names(kwargs), line=call.lineno)


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
    bound, found = BoundArgs(tree), {}
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_load_inline(n)), key=lambda c: c.lineno)
    for call in calls:
        try:
            resolved = bound.per_call_path(call, lambda read, c=call: _extension(c, read))
        except (CandidateFormatError, SourceExtractionError) as exc:
            raise CandidateFormatError(f"line {call.lineno}: {exc} (it is read without running the candidate)") from None
        for ext, _ in resolved:  # one per call path through build helpers; identical builds once
            found.setdefault((ext.name, ext.cpp_sources, ext.cuda_sources, ext.functions), ext)
    extensions = tuple(found.values())
    if not extensions:
        raise CandidateFormatError(
            "no torch.utils.cpp_extension.load_inline(...) call found: build the CUDA kernel with "
            "load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...]) and call it from ModelNew")
    if not any(ext.cuda_sources.strip() for ext in extensions):
        raise CandidateFormatError("load_inline has no cuda_sources: the kernel must be CUDA code")
    return extensions
