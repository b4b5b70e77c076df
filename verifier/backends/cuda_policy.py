"""What the cuda backend's builds hand to the build-policy checks (verifier.gates.hack_build).

Compile-only path (no GPU): nvcc keeps its intermediate files (``--keep``: ``<unit>.cpp1.ii`` is its
preprocessed source) and g++ its preprocessed output (``-save-temps``), so the checks read what the
compilers compiled at no extra cost; the candidate's lines of it (after the fixed preludes
load_inline adds) and the files it read go to ``<unit>.policy.json`` next to the objects (a cached
build carries them), the other intermediates are removed; the nvcc host object's symbols are checked.

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



NVCC_KEEP = ("--keep",)  # in the working directory
GXX_KEEP = ("-save-temps",)
_KEPT = (".cuda.o", ".policy.json", "compile-ok.txt")  # with the units' sources: what a cached build needs


def write_records(extensions: tuple[InlineExtension, ...], work: Path) -> None:
    """Turn each unit's preprocessed output into its small policy record; drop the intermediates."""
    from verifier.gates.hack_build import candidate_lines, read_text

    for i, ext in enumerate(extensions):
        stem = f"{ext.name}_{i}"
        preprocessed = {".cu": work / f"{stem}.cpp1.ii",
                        ".cpp": next((p for p in work.glob(f"*{stem}.ii") if ".cpp" not in p.name), work / "-")}
        for suffix, first, source in ((".cu", CUDA_FIRST_LINE, ext.cuda_sources), (".cpp", CPP_FIRST_LINE, ext.cpp_sources)):
            if not preprocessed[suffix].is_file():
                continue
            text, includes = candidate_lines(read_text(preprocessed[suffix]), first, first + source.count("\n"))
            (work / f"{stem}{suffix}.policy.json").write_text(json.dumps({"text": text, "includes": includes}))
    sources = {f"{ext.name}_{i}{suffix}" for i, ext in enumerate(extensions) for suffix in (".cu", ".cpp")}
    for path in work.iterdir():
        if path.is_file() and not path.name.endswith(_KEPT) and path.name not in sources:
            path.unlink()


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
            units.append(BuiltUnit(f"extension {ext.name} (line {ext.line})", binaries=libraries, strict_symbols=False))
    return tuple(units)
