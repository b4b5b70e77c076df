"""The hack gate's second tier: checks on what the compiler built, before any of it is loaded.

The first tier (hack_native) reads the candidate's text before the preprocessor runs, so a macro
can assemble any name it refuses (``#define CAT(a,b) a##b`` then ``CAT(as,m)``). Here:

* the compiler's own preprocessed output (``-save-temps`` / ``-E``) is cut down to the
  candidate's own lines, every macro expanded (those of system headers included), and the
  no-symbol checks run on that text: inline assembly outside CUDA device code, load-time hooks
  (constructor attributes, ``.init_array`` sections), cycle counters and return addresses, and,
  for extension modules, the CPython and pybind11 calls that run code or reach attributes
  (:func:`python_api_findings`; pybind11's own uses of them live in its headers, not in these lines);
* every file the preprocessor read must lie under the toolchain roots or the build directory
  (a computed ``#include MACRO`` names any path);
* the undefined symbols of each built object must pass :mod:`verifier.gates.native_symbols` for
  the unit's loader: everything a kernel calls is judged there, by the name the compiler left.

:func:`check_units` is what the monitor runs on the units its builder produced.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from verifier.backends.base import BuiltUnit
from verifier.gates.hack_native import (NativeContext, dispatch_switch_findings, hook_findings,
                                        python_api_findings)
from verifier.gates.hack_python import Finding
from verifier.gates.native_instructions import system_call_findings
from verifier.gates.native_symbols import loader_of, symbol_findings
from verifier.result import GateResult

ASM_AND_HOOKS = "c_inline_asm_and_load_hooks"
PYTHON_API = "c_python_api"
_LOAD_SECTIONS = re.compile(r"\.(?:pre)?init_array|\.fini_array|\.ctors|\.dtors")
_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)\s*$')
_PSEUDO_FILES = ("<built-in>", "<command-line>", "<command line>", "<stdin>")


def candidate_lines(preprocessed: str, first_line: int = 1, last_line: int | None = None) -> tuple[str, tuple[str, ...]]:
    """(the main file's lines ``first_line..last_line`` after preprocessing, at their original line
    numbers; every other file the preprocessor read). The main file is the first line marker's."""
    main, current, line = None, None, 0
    kept: dict[int, list[str]] = {}
    includes: dict[str, None] = {}  # ordered, and a constant-time membership test (a torch unit reads ~5000)
    for text in preprocessed.splitlines():
        marker = _MARKER.match(text) if text.startswith("# ") else None
        if marker:
            line, current = int(marker.group(1)), marker.group(2)
            main = main or current
            if current != main and current not in _PSEUDO_FILES:
                includes.setdefault(current)
            continue
        if text.startswith("#") and not text.startswith("#pragma"):
            continue  # other directives gcc keeps (#ident)
        if current == main and first_line <= line and (last_line is None or line <= last_line):
            kept.setdefault(line, []).append(text)
        line += 1
    if not kept:
        return "", tuple(includes)
    width = max(kept)
    return "\n".join(" ".join(kept.get(n, ())) for n in range(1, width + 1)), tuple(includes)


def preprocessed_findings(text: str, label: str, disabled: tuple[str, ...] = (), line_offset: int = 0,
                          cuda: bool = False) -> list[Finding]:
    """The no-symbol checks on the candidate's preprocessed lines."""
    ctx = NativeContext.build(text, cuda=cuda)
    raw: list[Finding] = []
    if ASM_AND_HOOKS not in disabled:
        raw.extend(hook_findings(ctx))
        raw.extend(Finding(ASM_AND_HOOKS, f"{m.group(0)}: code placed to run at load time is not allowed",
                           text.count("\n", 0, m.start()) + 1) for m in _LOAD_SECTIONS.finditer(text))
    if PYTHON_API not in disabled:
        raw.extend(python_api_findings(ctx, expanded=True))
    if "c_aten_compute" not in disabled:
        raw.extend(dispatch_switch_findings(ctx))
    return [Finding(f.check, f"{label}, after preprocessing: {f.message}", max(0, f.line - line_offset)) for f in raw]


def include_findings(includes: Iterable[str], roots: Iterable[str], label: str,
                     disabled: tuple[str, ...] = ()) -> list[Finding]:
    if "c_includes" in disabled:
        return []
    allowed = [os.path.realpath(r) for r in roots]
    findings = []
    directories: dict[str, str] = {}
    for name in includes:
        real = _realpath(name, directories)
        if not any(real == root or real.startswith(root.rstrip("/") + "/") for root in allowed):
            findings.append(Finding("c_includes", f"{label}: the preprocessor read {name}: only system and "
                                                  "toolchain headers may be included"))
    return findings


def _realpath(name: str, directories: dict[str, str]) -> str:
    """``os.path.realpath(name)``, resolving each directory once (a unit's headers share a few
    hundred directories); a file that is itself a link is resolved in full."""
    head, tail = os.path.split(name)
    if not tail or tail in (".", "..") or os.path.islink(name):
        return os.path.realpath(name)
    if head not in directories:
        directories[head] = os.path.realpath(head or ".")
    return os.path.join(directories[head], tail)


def check_units(units: Iterable[BuiltUnit], include_roots: Iterable[str], disabled: tuple[str, ...] = ()) -> list[Finding]:
    """Every finding of the built units (preprocessed text, included files, undefined symbols).
    A unit's loader (load_c, extension, vendor) and language are read from ``unit.loader`` /
    ``unit.language`` where units carry them, else from the label and ``strict_symbols``."""
    roots = tuple(include_roots)
    findings: list[Finding] = []
    for unit in units:
        loader = getattr(unit, "loader", "") or loader_of(unit.label, unit.strict_symbols)
        cuda = (getattr(unit, "language", "") or ("cuda" if unit.label.startswith("cuda_sources") else "")) == "cuda"
        findings += preprocessed_findings(unit.preprocessed, unit.label, disabled, unit.line_offset, cuda)
        findings += include_findings(unit.includes, roots, unit.label, disabled)
        for binary in unit.binaries:
            findings += symbol_findings(binary, unit.label, disabled, unit.strict_symbols, loader)
            findings += system_call_findings(binary, unit.label, disabled)
    return findings


def policy_gate(lines: list[str], seconds: float, max_listed: int = 5) -> GateResult:
    """The failed hack gate for the child's build-policy findings."""
    shown = [str(line) for line in lines[:max_listed]]
    if len(lines) > max_listed:
        shown.append(f"... and {len(lines) - max_listed} more")
    return GateResult("hack", False, f"static policy: {shown[0]}"[:300], seconds, detail="\n".join(shown))


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""
