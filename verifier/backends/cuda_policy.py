"""What the cuda backend's builds hand to the build-policy checks (verifier.gates.hack_build).

Compile-only path (no GPU): each nvcc / g++ job of the compile gate gets a twin that stops after
the preprocessor (``-E``); the candidate's lines of that output (after the fixed preludes load_inline
adds) and the files it read go to ``<unit>.policy.json`` next to the objects, so a cached build
carries them too; the nvcc host object's undefined symbols are checked.

GPU path: torch's load_inline also builds the candidate's own call (the extension load() imports);
the compile-only units above run there too, and the built extension's undefined symbols are checked.
"""

from __future__ import annotations

import json
from pathlib import Path

from verifier.backends.base import BuiltUnit
from verifier.backends.cuda_sources import CPP_PRELUDE, CUDA_PRELUDE, InlineExtension

CUDA_FIRST_LINE = CUDA_PRELUDE.count("\n") + 1  # the candidate's cuda_sources start here
CPP_FIRST_LINE = CPP_PRELUDE.count("\n") + 1



def preprocess_argv(argv: list[str], out: str) -> list[str]:
    """The preprocessor-only twin of a compile job (nvcc ``-c x.cu -o y.o`` or g++ ``-fsyntax-only x.cpp``)."""
    drop = {"-c", "-fsyntax-only", "-Xptxas", "-v"}
    twin, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        if arg not in drop:
            twin.append(arg)
    return [*twin, "-E", "-o", out]


def write_records(extensions: tuple[InlineExtension, ...], work: Path) -> None:
    """Turn each unit's preprocessed output into its small policy record (and drop the big .ii)."""
    from verifier.gates.hack_build import candidate_lines, read_text

    for i, ext in enumerate(extensions):
        for suffix, first, source in ((".cu", CUDA_FIRST_LINE, ext.cuda_sources), (".cpp", CPP_FIRST_LINE, ext.cpp_sources)):
            ii = work / f"{ext.name}_{i}{suffix}.ii"
            if not ii.is_file():
                continue
            text, includes = candidate_lines(read_text(ii), first, first + source.count("\n"))
            (work / f"{ext.name}_{i}{suffix}.policy.json").write_text(json.dumps({"text": text, "includes": includes}))
            ii.unlink()


def compile_only_units(extensions: tuple[InlineExtension, ...], work: Path) -> tuple[BuiltUnit, ...]:
    units = []
    for i, ext in enumerate(extensions):
        for suffix, first, what in ((".cu", CUDA_FIRST_LINE, "cuda_sources"), (".cpp", CPP_FIRST_LINE, "cpp_sources")):
            record = work / f"{ext.name}_{i}{suffix}.policy.json"
            if not record.is_file():
                continue
            data = json.loads(record.read_text())
            obj = work / f"{ext.name}_{i}.cuda.o"
            binaries = (str(obj),) if suffix == ".cu" and obj.is_file() else ()
            units.append(BuiltUnit(f"{what} of {ext.name} (line {ext.line})", str(data.get("text", "")),
                                   tuple(data.get("includes", ())), binaries, line_offset=first - 1))
    return tuple(units)


def gpu_units(ext_dir: Path, extensions: tuple[InlineExtension, ...]) -> tuple[BuiltUnit, ...]:
    """The extensions torch built in ``<ext_dir>/<name>`` (their undefined symbols)."""
    units = []
    for ext in extensions:
        libraries = tuple(str(p) for p in sorted((ext_dir / ext.name).glob("*.so")))
        if libraries:
            units.append(BuiltUnit(f"extension {ext.name} (line {ext.line})", binaries=libraries))
    return tuple(units)
