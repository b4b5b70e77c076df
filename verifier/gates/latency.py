"""The latency gate: the monitor's paired timing summarised (median per side, speedup =
exp(median log(ref/cand)) over rounds, 95% percentile-bootstrap CI, roofline position, trust, flags).

The monitor times every window of calls itself (verifier.monitor.timing): the candidate's runner and
the reference worker are separate processes, each window is a command the monitor sends with its own
clock running until the answer is back, sides in a random order per round, on inputs all sides share
per round, fresh for every round. No process's own number is ever used. The speedup is the median over
rounds of each round's ratio (reference time / candidate time), so it can differ a little from the
ratio of the two median times.

Trust: a round that other work on the machine disturbed is timed again; when too few rounds were
undisturbed the figure is reported but not trusted (``trusted`` False, the reason with it): the
machine's outcome, never a kernel's score. A candidate whose cost relative to the reference kept rising
through the rounds, or stepped up part way through them (verifier.gates.trend), has no steady figure
either and is not trusted, the rise named.

Plausibility: a candidate faster than this machine's measured peaks allow for the task's bytes and
FLOPs (verifier.roofline) is flagged for review. The fixed ratio bound (VerifySettings.plausibility_bound,
default 10x, KernelBench's review threshold) is a secondary hint: it flags only where no roofline
position exists (no probed peaks or no counted workload), and is otherwise a note (a 4x4 max-pool
can honestly run 26x faster than torch's NCHW CPU kernel at a believable share of bandwidth).
Rounds that spread widely (either side's IQR/median above 25%) flag too. Nothing here fails the gate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier.result import UNTRUSTED_LATENCY, GateResult, LatencyResult
from verifier.gates.trend import rising_reason
from verifier.roofline import MachinePeaks, Workload, position


# torch.utils.benchmark warns at IQR/median > 10% and calls > 25% gross: a round-to-round spread this
# wide means other work shared the cores (OpenMP regions wait for descheduled threads).
NOISY_IQR = 0.25


def relative_iqr(values: np.ndarray) -> float:
    """Interquartile range over median of one side's per-round times."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else 0.0


@dataclass(frozen=True)
class WindowFacts:
    """How the rounds were timed (verifier.monitor.timing.Measurement.facts)."""

    calls_per_window: int = 1
    rounds_retimed: int = 0
    trusted: bool = True
    untrusted_reason: str = ""
    priority: str = ""
    fixed_ms: float = 0.0  # the empty window's time, subtracted from every window
    cold_ms: float = 0.0  # the reference's first call of a window beyond its median call, subtracted from every window
    late_ms: float = 0.0  # the candidate's collect beyond the reference's, per window, added to its calls' time
    early_ms: float = 0.0  # what the candidate computed before its clock started, per window on average, added


@dataclass(frozen=True)
class PairedTimes:
    """The monitor's own clock: per round, each side's time per call (its window over its calls, ms)."""

    candidate_ms: tuple[float, ...]
    reference_ms: tuple[float, ...]


def median_ci(logs: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[float, float]:
    """The 95% bootstrap CI of the median of ``logs`` (the rounds' log ratios)."""
    boot = np.median(rng.choice(logs, size=(resamples, len(logs)), replace=True), axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(low), float(high)


def summarise(times: PairedTimes, resamples: int, bound: float, seed: int = 0, workload: Workload | None = None,
              peaks: MachinePeaks | None = None, facts: WindowFacts | None = None) -> LatencyResult:
    """Median per side, speedup with a 95% bootstrap CI, roofline position, trust, flags."""
    facts = facts or WindowFacts()
    cand = np.asarray(times.candidate_ms, dtype=np.float64)
    ref = np.asarray(times.reference_ms, dtype=np.float64)
    logs = np.log(np.maximum(ref, 1e-9) / np.maximum(cand, 1e-9))
    low, high = median_ci(logs, resamples, np.random.default_rng(seed))
    speedup = float(np.exp(np.median(logs)))
    candidate_ms = float(np.median(cand))
    roof = position(workload, candidate_ms / 1e3, peaks, facts.calls_per_window) if workload and peaks else None
    reasons, note = [], ""
    if roof is not None and roof.implausible:
        reasons.append(f"implausible by roofline: {roof.implausible_reason()}: review before trusting")
    if speedup > bound:
        ratio = f"speedup {speedup:.1f}x exceeds the plausibility bound {bound:g}x"
        if roof is None:
            reasons.append(f"{ratio}: review before trusting")
        elif not roof.implausible:
            note = f"{ratio}, but is within this machine's roofline ({roof.fraction:.0%} of the roof)"
    if facts.late_ms > 0:
        late = (f"collecting its outputs took {facts.late_ms:.2f} ms a window longer than the reference's: counted "
                "as its time (work that went on after forward returned)")
        note = f"{note}; {late}" if note else late
    if facts.early_ms > 0:
        early = (f"its process computed {facts.early_ms:.2f} ms a window on average after it was continued and before "
                 "its clock started, with the window's inputs already in place: counted as its time")
        note = f"{note}; {early}" if note else early
    noisy = {side: spread for side, spread in (("candidate", relative_iqr(cand)), ("reference", relative_iqr(ref)))
             if spread > NOISY_IQR}
    if noisy:
        reasons.append("rounds spread widely (IQR/median " + ", ".join(f"{k} {v:.0%}" for k, v in noisy.items())
                       + ")")
    trusted, untrusted_reason = facts.trusted, facts.untrusted_reason
    if trusted and (rising := rising_reason(cand, ref)):
        trusted, untrusted_reason = False, rising
    if not trusted:
        reasons.append(f"not measured trustworthily: {untrusted_reason}")
    return LatencyResult(candidate_ms=candidate_ms, reference_ms=float(np.median(ref)),
                         speedup=speedup, ci_low=float(np.exp(low)), ci_high=float(np.exp(high)),
                         rounds=len(cand), flagged=bool(reasons), flag_reason="; ".join(reasons),
                         roofline=roof, note=note, calls_per_window=facts.calls_per_window,
                         rounds_retimed=facts.rounds_retimed, trusted=trusted,
                         untrusted_reason=untrusted_reason, priority=facts.priority,
                         window_fixed_ms=facts.fixed_ms, window_cold_ms=facts.cold_ms, late_ms=facts.late_ms,
                         early_ms=facts.early_ms)


def latency_gate(result: LatencyResult, seconds: float) -> GateResult:
    detail = (f"candidate {result.candidate_ms:.3f} ms, reference {result.reference_ms:.3f} ms per call (medians); "
              f"speedup {result.speedup:.2f}x, the median of the rounds' ratios (95% CI {result.ci_low:.2f}-"
              f"{result.ci_high:.2f}, {result.rounds} rounds of {result.calls_per_window} calls per side"
              + (f", {result.rounds_retimed} retimed" if result.rounds_retimed else "") + ")")
    if result.roofline is not None:
        detail += f"; {result.roofline.line()}"
    if result.flagged:
        detail += f"; FLAGGED: {result.flag_reason}"
    if result.note:
        detail += f"; note: {result.note}"
    reason = "" if result.trusted else f"{UNTRUSTED_LATENCY}: {result.untrusted_reason}"[:300]
    return GateResult("latency", True, reason, seconds, detail=detail)
