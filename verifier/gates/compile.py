"""The compile gate: the child's build report (and candidate import/construction) as a GateResult."""

from __future__ import annotations

from verifier.result import GateResult


def compile_gate(report: dict, load: dict | None, seconds: float) -> GateResult:
    if not report.get("ok"):
        diagnostics = str(report.get("diagnostics", ""))
        first = diagnostics.splitlines()[0] if diagnostics else "build failed"
        return GateResult("compile", False, first[:300], seconds, detail=diagnostics[:4000])
    if load is not None and not load.get("ok"):
        error = str(load.get("error", ""))
        return GateResult("compile", False, f"ModelNew failed to import or construct: {error.splitlines()[-1][:300] if error else ''}",
                          seconds, detail=error)
    cached = " (cached)" if report.get("cached") else ""
    note = str(report.get("note") or "")[:300]  # e.g. the level a compile reached (triton-ascend: HIVM)
    built = f"built in {float(report.get('seconds', 0)):.2f} s{cached}"
    return GateResult("compile", True, note, seconds, detail=f"{built}\n{report.get('diagnostics', '')}" if note else built)


def failed(reason: str, seconds: float, detail: str = "") -> GateResult:
    return GateResult("compile", False, reason, seconds, detail=detail)
