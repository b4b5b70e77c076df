"""A KernelBench CUDA candidate's ``load_inline`` call, as the runner recorded it, rebuilt into the two
translation units load_inline would compile (same preludes, same pybind module), so that nvcc/g++
see what torch's build would see. The arguments are the real call's (verifier.sandbox.loaders):
whatever Python computed them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_SOURCE = 4 << 20


def extension_from_call(args: dict[str, object]) -> InlineExtension:
    """The recorded call's extension; CandidateFormatError says what to change."""
    name = args.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CandidateFormatError("load_inline: name must be a Python identifier")
    ext = InlineExtension(name=name, cpp_sources=_text(args, "cpp_sources"), cuda_sources=_text(args, "cuda_sources"),
                          functions=_names(args), line=0)
    if not ext.cuda_sources.strip():
        raise CandidateFormatError("load_inline has no cuda_sources: the kernel must be CUDA code")
    if len(ext.cuda_sources) + len(ext.cpp_sources) > MAX_SOURCE or "\0" in ext.cuda_sources + ext.cpp_sources:
        raise CandidateFormatError("load_inline: sources larger than 4 MB or with NUL bytes")
    if any(not _NAME.fullmatch(f) for f in ext.functions):
        raise CandidateFormatError("load_inline: functions must be C++ function names")
    return ext
