"""The hack gate: static policy (Python AST + native text, parent side, before anything runs)
plus the runtime integrity verdict the sandbox child reports (see verifier.sandbox.integrity).
"""

from __future__ import annotations

import time

from verifier.gates.hack_native import run_native_checks
from verifier.gates.hack_python import Finding, run_python_checks
from verifier.native_sources import NativeSource, SourceExtractionError, extract
from verifier.result import GateResult

MAX_LISTED = 5


def static_findings(candidate_source: str, task_dtype: str, disabled: tuple[str, ...] = (),
                    extra_imports: frozenset[str] = frozenset()) -> list[Finding]:
    """extra_imports: the backend's kernel-language modules (Backend.static_imports), e.g. triton."""
    findings = run_python_checks(candidate_source, task_dtype, disabled, extra_imports)
    try:
        sources = extract(candidate_source)
    except (SyntaxError, SourceExtractionError):
        sources = ()  # reported by the compile gate
    for native in sources:
        for code, language in _parts(native):
            findings.extend(run_native_checks(code, task_dtype, disabled, language))
    return findings


def _parts(native: NativeSource) -> list[tuple[str, str]]:
    """(text, language) of each part: a load_inline's cuda_sources are nvcc's (PTX in device code)."""
    args = dict(native.inline_args)
    if native.loader != "load_inline" or not args.get("cuda_sources"):
        return [(native.code, "c++")]
    join = lambda v: "\n".join(v) if isinstance(v, (list, tuple)) else str(v or "")  # noqa: E731
    return [(join(args.get("cpp_sources")), "c++"), (join(args.get("cuda_sources")), "cuda")]


def static_gate(candidate_source: str, task_dtype: str, disabled: tuple[str, ...] = (),
                extra_imports: frozenset[str] = frozenset()) -> GateResult:
    start = time.perf_counter()
    findings = static_findings(candidate_source, task_dtype, disabled, extra_imports)
    seconds = time.perf_counter() - start
    if not findings:
        return GateResult("hack", True, "", seconds)
    lines = [f.line_text() for f in findings[:MAX_LISTED]]
    if len(findings) > MAX_LISTED:
        lines.append(f"... and {len(findings) - MAX_LISTED} more")
    return GateResult("hack", False, f"static policy: {lines[0]}", seconds, detail="\n".join(lines))


def runtime_failure(reason: str, seconds: float, detail: str = "") -> GateResult:
    """The hack gate after a runtime integrity violation found in the sandbox."""
    return GateResult("hack", False, f"runtime integrity: {reason}"[:300], seconds, detail=detail or reason)
