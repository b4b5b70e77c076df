"""The hack gate: the static policy on the candidate's Python (monitor side, before anything runs);
the native sources are checked when the runner's loader calls hand them to the monitor
(verifier.monitor.builds), and runtime integrity is observed by the monitor after every call
(verifier.monitor.watch).
"""

from __future__ import annotations

import time

from verifier.gates.hack_python import Finding, run_python_checks
from verifier.result import GateResult

MAX_LISTED = 5


def static_findings(candidate_source: str, task_dtype: str, disabled: tuple[str, ...] = (),
                    extra_imports: frozenset[str] = frozenset()) -> list[Finding]:
    """extra_imports: the backend's kernel-language modules (Backend.static_imports), e.g. triton."""
    return run_python_checks(candidate_source, task_dtype, disabled, extra_imports)


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
