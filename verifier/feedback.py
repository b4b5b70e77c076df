"""Feedback for the LLM: short structured text naming the failed gate, the trimmed reason and
detail, or for a passing candidate the speedup with its definition and confidence interval, the
times it came from, and its roofline position (how much of this machine's measured bandwidth or
compute peak it reaches).

Every figure carries its unit, and the speedup says what it is: the median over rounds of the
per-round ratio reference time / candidate time (each round times both), which is not the ratio of
the two median times when rounds vary; where those differ by more than 2% the feedback says so
with both numbers. Flags are told as what they mean for the model's kernel, without advice it
cannot act on (the verifier's own flag text asks a human to rerun or review; :func:`flag_line`
rewrites it here).
"""

from __future__ import annotations

import re

from verifier.gate_plan import is_unavailable
from verifier.result import LatencyResult, Verdict

MAX_DETAIL_LINES = 20
# Advice in the latency gate's flag text that the model cannot act on (verifier/gates/latency.py).
_NOT_ACTIONABLE = re.compile(r"(: a loaded machine)?; rerun before trusting the speedup|: review before trusting")


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
        lines.insert(0, "RESULT: passed all gates")
        lines += latency_lines(verdict.latency)
    return "\n".join(lines)


def latency_lines(lat: LatencyResult) -> list[str]:
    """The speedup with its definition and interval, the median times, roofline, notes and flags."""
    lines = [f"latency: speedup {lat.speedup:.2f}x over the reference (95% CI {lat.ci_low:.2f}-{lat.ci_high:.2f}) = "
             f"the median over {lat.rounds} rounds of reference time / candidate time, both timed in each round; "
             f"median times: candidate {lat.candidate_ms:.3f} ms, reference {lat.reference_ms:.3f} ms"]
    of_medians = lat.reference_ms / lat.candidate_ms if lat.candidate_ms > 0 else None
    if of_medians is not None and abs(of_medians / lat.speedup - 1.0) > 0.02:
        lines[0] += (f" (their ratio, {of_medians:.2f}x, differs from the speedup: the rounds varied, and the "
                     "median of the ratios is what counts)")
    if lat.roofline is not None:
        lines.append(lat.roofline.line())
    if lat.ci_high < 1.0:
        lines.append("note: slower than the reference; aim for a speedup above 1")
    if lat.flagged:
        lines.append(flag_line(lat.flag_reason))
    if lat.note:
        lines.append(f"note: {lat.note}")
    return lines


def flag_line(reason: str) -> str:
    """The latency flag as the model reads it: what was found and what it means for the timing."""
    text = _NOT_ACTIONABLE.sub("", reason)
    if "noisy timing" in reason:
        text += ("; other work shared this machine's cores while timing, so this speedup is uncertain "
                 "(its CI says how much); this is not a verdict on your kernel")
    if "implausible" in reason or "plausibility bound" in reason:
        text += ("; a time this short usually means work was skipped or not waited for, so this timing "
                 "does not count as the task's best")
    return f"flag: {text}"
