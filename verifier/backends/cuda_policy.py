"""What the cuda backend's builds hand to the build-policy checks (verifier.gates.hack_build).

Compile-only build (no GPU, in the builder): nvcc keeps its intermediate files (``--keep``:
``<name>.cpp1.ii`` is its preprocessed source) and g++ its preprocessed output (``-save-temps``); the
candidate's lines of each (after the fixed preludes load_inline adds) and the files they read become
``<name>.cu.policy.json`` / ``<name>.cpp.policy.json`` (:func:`write_records`), the records the monitor
reads (:func:`units`); the nvcc object's undefined symbols are checked. GPU build: torch's extension
build; the library's undefined symbols are checked (vendor runtimes not listed: only the known
dangerous ones are refused).
"""

from __future__ import annotations

import json
from pathlib import Path

from verifier.backends.base import BuildJob, BuiltUnit
from verifier.backends.cuda_sources import CPP_PRELUDE, CUDA_PRELUDE, InlineExtension

CUDA_FIRST_LINE = CUDA_PRELUDE.count("\n") + 1  # the candidate's cuda_sources start here
CPP_FIRST_LINE = CPP_PRELUDE.count("\n") + 1
NVCC_KEEP = ("--keep",)  # in the working directory
GXX_KEEP = ("-save-temps",)


def write_records(extensions: tuple[InlineExtension, ...], work: Path) -> None:
    """Builder side: each unit's preprocessed output as its small policy record."""
    from verifier.gates.hack_build import candidate_lines, read_text

    for ext in extensions:
        preprocessed = {".cu": work / f"{ext.name}.cpp1.ii",
                        ".cpp": next((p for p in work.glob(f"{ext.name}.ii")), work / "-")}
        for suffix, first, source in ((".cu", CUDA_FIRST_LINE, ext.cuda_sources), (".cpp", CPP_FIRST_LINE, ext.cpp_sources)):
            if not preprocessed[suffix].is_file():
                continue
            text, includes = candidate_lines(read_text(preprocessed[suffix]), first, first + source.count("\n"))
            (work / f"{ext.name}{suffix}.policy.json").write_text(json.dumps({"text": text, "includes": includes}))


def units(job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
    """Monitor side: the units of a finished build, from its records and its object."""
    binaries = (str(library),) if library is not None else ()
    if job.artifact.endswith(".so"):  # the GPU build: the extension torch built
        return (BuiltUnit(job.label, binaries=binaries, strict_symbols=False, loader="extension"),)
    found = []
    name = job.artifact.removesuffix(".cuda.o")
    for suffix, first, what in ((".cu", CUDA_FIRST_LINE, "cuda_sources"), (".cpp", CPP_FIRST_LINE, "cpp_sources")):
        raw = records.get(f"{name}{suffix}.policy.json")
        if not raw:
            continue
        data = json.loads(raw)
        found.append(BuiltUnit(f"{what} of {name}", str(data.get("text", "")), tuple(data.get("includes", ())),
                               binaries if suffix == ".cu" else (), line_offset=first - 1, loader="extension",
                               language="cuda" if suffix == ".cu" else "c++"))
    return tuple(found)
