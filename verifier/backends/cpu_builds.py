"""The CPU backend's builds: a recorded ``load_c`` or ``load_inline`` call turned into a build job the
monitor runs in the confined builder, and a finished build turned into what the policy checks read.

``load_c``: ``g++`` with the fast loader's fixed flags (verifier.cpu_native) on the source, keyed by
``cpu_native.source_key``. ``load_inline``: torch's own extension build (``python -m
verifier.sandbox.inline_builder``: the same generated module and ninja build as ``load_inline``, never
imported there), with the candidate's flags filtered by verifier.build_flags, keyed by the call's
validated arguments, the compiler and torch. Both keep the compiler's preprocessed text
(``-save-temps``) for the checks after preprocessing (verifier.gates.hack_build).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from verifier import build_flags, cpu_native
from verifier.backends.base import BuildJob, BuildRejected, BuiltUnit

MAX_SOURCE = 4 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "?"


def _text(value, what: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "\n".join(value)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BuildRejected(f"{what} must be a string or a list of strings")
    if len(value) > MAX_SOURCE:
        raise BuildRejected(f"{what} is larger than {MAX_SOURCE >> 20} MB")
    if "\0" in value:
        raise BuildRejected(f"{what} contains a NUL byte")
    return value


def load_c_job(args: dict) -> BuildJob:
    source = _text(args.get("source"), "load_c source")
    functions = args.get("functions")
    if not isinstance(functions, dict) or not functions or not all(
            isinstance(k, str) and _NAME.fullmatch(k) and isinstance(v, str) for k, v in functions.items()):
        raise BuildRejected("load_c: functions must be a non-empty dict of {name: \"argument types\"}")
    key = cpu_native.source_key(source)
    argv = (cpu_native.COMPILER, *cpu_native.FLAGS, "-save-temps", "kernel.cpp", "-o", "kernel.so",
            *cpu_native.link_flags(source))
    return BuildJob(key, "load_c source", (("kernel.cpp", source),), argv, artifact="kernel.so", records=("kernel.ii",),
                    sources=((source, "c++"),))


def load_inline_job(args: dict) -> BuildJob:
    name = args.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BuildRejected("load_inline: name must be a Python identifier")
    if _text(args.get("cuda_sources"), "cuda_sources").strip() or args.get("with_cuda"):
        raise BuildRejected("load_inline: cuda_sources need the cuda backend (this is the cpu backend)")
    if args.get("build_directory") not in (None, ""):
        raise BuildRejected("load_inline: build_directory is chosen by the verifier; leave it out")
    cpp = _text(args.get("cpp_sources"), "cpp_sources")
    functions = _inline_functions(args.get("functions"))
    cflags, ldflags = build_flags.compile_flags(args.get("extra_cflags")), build_flags.link_flags(args.get("extra_ldflags"))
    if args.get("extra_include_paths"):
        cflags = build_flags.Flags(cflags.kept, cflags.dropped + tuple(f"-I{p}" for p in args["extra_include_paths"]))
    job = {"name": name, "cpp_sources": cpp, "functions": functions,
           "extra_cflags": list(cflags.kept), "extra_ldflags": list(ldflags.kept),
           "with_pytorch_error_handling": args.get("with_pytorch_error_handling", True) is not False,
           "no_implicit_headers": args.get("no_implicit_headers", False) is True}
    key = hashlib.sha256(json.dumps({**job, "toolchain": [cpu_native.source_key(""), _torch_version()]},
                                    sort_keys=True).encode()).hexdigest()
    note = "; ".join(n for n in (cflags.note("extra_cflags"), ldflags.note("extra_ldflags")) if n)
    return BuildJob(key, "load_inline cpp_sources", (("job.json", json.dumps(job)),),
                    (sys.executable, "-m", "verifier.sandbox.inline_builder", "job.json"),
                    artifact=f"{name}.so", records=("main.ii",), note=note, python=True, sources=((cpp, "c++"),))


_DOCSTRING = re.compile(r"[^\"\\\x00-\x1f\x7f]{0,1000}")


def _inline_functions(functions):
    """``functions`` as torch's load_inline takes it (None: no bindings are generated; a name; a list of
    names; {name: docstring}), validated: names are C++ identifiers, and a docstring, which torch pastes
    into the generated C++ between quotes after the candidate's checked lines, holds no quote, backslash
    or control character (it would end the string and add code no check reads)."""
    if functions is None:
        return None
    if isinstance(functions, str):
        functions = [functions]
    names = list(functions) if isinstance(functions, (list, dict)) else None
    if names is None or not all(isinstance(f, str) and _NAME.fullmatch(f) for f in names):
        raise BuildRejected("load_inline: functions must be a list of C++ function names (or {name: docstring})")
    if isinstance(functions, dict) and not all(isinstance(d, str) and _DOCSTRING.fullmatch(d) for d in functions.values()):
        raise BuildRejected("load_inline: a docstring in functions may not hold quotes, backslashes or line breaks")
    return functions


def inline_source_lines(cpp_sources: str, implicit_headers: bool = True) -> tuple[int, int]:
    """Lines of the generated main.cpp that hold the candidate's cpp_sources (line 1 is torch's
    ``#include <torch/extension.h>`` unless ``no_implicit_headers``; the pybind module follows them)."""
    first = 2 if implicit_headers else 1
    return first, first + cpp_sources.count("\n")


def units(job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
    from verifier.gates.hack_build import candidate_lines

    text = records.get(job.records[0], b"").decode(errors="replace") if job.records else ""
    binaries = (str(library),) if library is not None else ()
    if job.artifact == "kernel.so":
        lines, includes = candidate_lines(text)
        return (BuiltUnit(job.label, lines, includes, binaries, loader="load_c", language="c++"),)
    spec = json.loads(dict(job.files)["job.json"])
    first, last = inline_source_lines(spec["cpp_sources"], not spec.get("no_implicit_headers", False))
    lines, includes = candidate_lines(text, first, last)
    return (BuiltUnit(job.label, lines, includes, binaries, line_offset=first - 1, loader="extension", language="c++"),)
