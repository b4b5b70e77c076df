"""Feedback for the LLM: short structured text naming the failed gate, the trimmed reason and
detail, or for a passing candidate the latency, speedup and confidence interval, and its roofline
position (how much of this machine's measured bandwidth or compute peak it reaches)."""

from __future__ import annotations

from verifier.gate_plan import is_unavailable
from verifier.result import Verdict

MAX_DETAIL_LINES = 20


def format_feedback(verdict: Verdict) -> str:
    if verdict.infrastructure_error:
        return f"VERIFIER ERROR (not your kernel's fault): {verdict.infrastructure_error}"
    lines = []
    failed = verdict.failed_gate
    for gate in verdict.gates:
        mark = "ok" if gate.passed else "not run on this machine" if is_unavailable(gate) else "FAILED"
        lines.append(f"[{gate.name}] {mark}" + (f": {gate.reason}" if gate.reason else ""))
    failed_gate = verdict.gate(failed) if failed else None
    if failed_gate is not None and is_unavailable(failed_gate):  # never called a failure: nothing failed
        ran = [g.name for g in verdict.gates if g.passed]
        head = (f"RESULT: passed every gate this machine can run ({', '.join(ran)})" if ran else
                "RESULT: not judged")
        lines.insert(0, f"{head}; the {failed} gate cannot run on this machine, so this is not a verdict "
                        f"on that part of your kernel")
        missing = [g.name for g in verdict.gates if is_unavailable(g)]
        lines.append(f"note: this verifier cannot run {', '.join(missing)} (missing hardware or toolchain); "
                     f"the results of {', '.join(ran) or 'no gate'} above are real")
        return "\n".join(lines)
    if failed:
        gate = verdict.gate(failed)
        if gate and gate.detail and gate.detail.strip() != gate.reason.strip():
            detail = gate.detail.splitlines()
            lines.append("details:")
            lines.extend("  " + ln for ln in detail[:MAX_DETAIL_LINES])
            if len(detail) > MAX_DETAIL_LINES:
                lines.append(f"  ... ({len(detail) - MAX_DETAIL_LINES} more lines)")
        lines.insert(0, f"RESULT: failed at the {failed} gate")
        missing = [g.name for g in verdict.gates if is_unavailable(g)]
        if missing:
            ran = [g.name for g in verdict.gates if not is_unavailable(g)]
            lines.append(f"note: this verifier cannot run {', '.join(missing)} (missing hardware or toolchain); "
                         f"the results of {', '.join(ran)} above are real")
    elif verdict.latency:
        lat = verdict.latency
        lines.insert(0, "RESULT: passed all gates")
        lines.append(f"latency: candidate {lat.candidate_ms:.3f} ms, reference {lat.reference_ms:.3f} ms, "
                     f"speedup {lat.speedup:.2f}x (95% CI {lat.ci_low:.2f}-{lat.ci_high:.2f}, {lat.rounds} rounds)")
        if lat.roofline is not None:
            lines.append(lat.roofline.line())
        if lat.ci_high < 1.0:
            lines.append("note: slower than the reference; aim for a speedup above 1")
        if lat.flagged:
            lines.append(f"flag: {lat.flag_reason}")
        if lat.note:
            lines.append(f"note: {lat.note}")
    return "\n".join(lines)
