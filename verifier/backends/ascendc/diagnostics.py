"""Turning CANN build output (bisheng/clang, msopgen, CMake, the linker) into LLM feedback.

A failed stage becomes: the stage and command, then up to ten parsed errors as
``path:line:col: error: message`` with private build paths removed, then hints for the failure
patterns that dominate LLM-written Ascend C (invented APIs: "no member named", UB overflow,
misaligned copies). Unparsed output falls back to the trimmed tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifier.backends.toolrun import ToolRun, trim_diagnostics

MAX_ERRORS = 10
_CLANG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning):"
                    r"\s*(?P<msg>.*)$")
_CMAKE = re.compile(r"^CMake Error at (?P<file>[^:]+):(?P<line>\d+)")
_LINKER = re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'")
_TOOL_ERROR = re.compile(r"^\s*(?:\[ERROR\]|ERROR:?|Error:)\s*(?P<msg>.+)$")
_HINTS = (
    ("no member named", "the API does not exist in AscendC (models often invent names such as "
                        "AscendC::Softmax): use only the APIs listed in the scaffold"),
    ("ub overflow", "the Unified Buffer (192 KB on 910B) is exceeded: shrink the tile or BUFFER_NUM"),
    ("align", "DataCopy moves 32-byte blocks: tile lengths must be multiples of 8 floats; use DataCopyPad "
              "for tails"),
    ("undefined reference", "a declared function has no definition: check the kernel entry and launch "
                            "wrapper names match the binding's declarations"),
)


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    column: int
    severity: str  # error | fatal error | warning | linker | tool
    message: str

    def render(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.file else ""
        return f"{where}{self.severity}: {self.message}"


def parse_diagnostics(text: str, strip_prefixes: tuple[str, ...] = ()) -> tuple[Diagnostic, ...]:
    for prefix in sorted(strip_prefixes, key=len, reverse=True):
        if prefix:
            text = text.replace(prefix.rstrip("/") + "/", "")
    found: list[Diagnostic] = []
    for raw in text.splitlines():
        line = raw.strip()
        if m := _CLANG.match(line):
            found.append(Diagnostic(m["file"], int(m["line"]), int(m["col"] or 0), m["sev"], m["msg"].strip()))
        elif m := _CMAKE.match(line):
            found.append(Diagnostic(m["file"], int(m["line"]), 0, "error", "CMake error"))
        elif m := _LINKER.search(line):
            found.append(Diagnostic("", 0, 0, "linker", f"undefined reference to '{m['sym']}'"))
        elif m := _TOOL_ERROR.match(line):
            found.append(Diagnostic("", 0, 0, "tool", m["msg"].strip()))
    return tuple(found)


def stage_feedback(stage: str, run: ToolRun, strip_prefixes: tuple[str, ...] = ()) -> str:
    """The feedback for one failed build stage."""
    text = run.stdout + "\n" + run.stderr
    errors = [d for d in parse_diagnostics(text, strip_prefixes) if d.severity != "warning"]
    head = f"ascendc {stage} failed (exit {run.returncode}{', timed out' if run.timed_out else ''})"
    body = "\n".join(d.render() for d in errors[:MAX_ERRORS]) if errors else trim_diagnostics(text, strip_prefixes)
    more = f"\n... and {len(errors) - MAX_ERRORS} more errors" if len(errors) > MAX_ERRORS else ""
    lowered = text.lower()
    hints = "".join(f"\nhint: {hint}" for key, hint in _HINTS if key in lowered)
    return f"{head}:\n{body}{more}{hints}"
