"""The compile gate: the child's build report (and candidate import/construction) as a GateResult."""

from __future__ import annotations

from verifier.result import GateResult
from verifier.sandbox.messages import CompileReport, LoadReport


def compile_gate(report: CompileReport, load: LoadReport | None, seconds: float) -> GateResult:
    if not report.ok:
        first = report.diagnostics.splitlines()[0] if report.diagnostics else "build failed"
        return GateResult("compile", False, first[:300], seconds, detail=report.diagnostics[:4000])
    if load is not None and not load.ok:
        last = load.error.splitlines()[-1][:300] if load.error else ""
        return GateResult("compile", False, f"ModelNew failed to import or construct: {last}", seconds,
                          detail=load.error)
    cached = " (cached)" if report.cached else ""
    built = f"built in {report.seconds:.2f} s{cached}"
    if not report.note:
        return GateResult("compile", True, "", seconds, detail=built)
    # e.g. the level a compile reached (triton-ascend: HIVM), with the compiler's output below it
    return GateResult("compile", True, report.note[:300], seconds, detail=f"{built}\n{report.diagnostics}")


def failed(reason: str, seconds: float, detail: str = "") -> GateResult:
    return GateResult("compile", False, reason, seconds, detail=detail)
