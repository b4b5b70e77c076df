"""The latency gate: paired, interleaved timing in the child (candidate and reference in the same
process, same thread budget, fresh inputs every call, warm-up first) and the parent-side summary
(median per side, speedup = exp(median log(ref/cand)) over rounds, 95% percentile-bootstrap CI,
roofline position, plausibility flag).

The child passes the backend's ``timer()`` (a synchronized wall clock on the CPU; CUDA events
after an L2 flush on a GPU, verifier.backends.gpu_timing) and ``fresh_inputs`` already placed on
the backend's device, so input generation and the host-to-device copy stay outside the timed call.

The random-iteration audit (verifier.sandbox.audit) plants two trials at secret timed calls; their
outputs, kept untimed, must match the reference (:func:`audit_problem`).

Plausibility: a candidate faster than this machine's measured peaks allow for the task's bytes and
FLOPs (verifier.roofline) is flagged for review. The fixed ratio bound (VerifySettings.plausibility_bound,
default 10x, KernelBench's review threshold) is a secondary hint: it flags only where no roofline
position exists (no probed peaks or no counted workload), and is otherwise a note (a 4x4 max-pool
can honestly run 26x faster than torch's NCHW CPU kernel at a believable share of bandwidth).
Noisy timing (either side's IQR/median above 25%) flags too. Nothing here fails the gate.
"""

from __future__ import annotations

import statistics

import numpy as np

from verifier.gates.correctness import TrialChecks
from verifier.result import GateResult, LatencyResult
from verifier.roofline import MachinePeaks, Workload, position
from verifier.sandbox.audit import expected_audits
from verifier.sandbox.messages import Timing, TrialOutputs
from verifier.sandbox.timer import PairedTimes


# torch.utils.benchmark warns at IQR/median > 10% and calls > 25% gross: a round-to-round spread this
# wide means other work shared the cores (OpenMP regions wait for descheduled threads).
NOISY_IQR = 0.25


def relative_iqr(values: np.ndarray) -> float:
    """Interquartile range over median of one side's per-round times."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else 0.0


def summarise(times: PairedTimes, resamples: int, bound: float, seed: int = 0, workload: Workload | None = None,
              peaks: MachinePeaks | None = None) -> LatencyResult:
    """Parent side: median per side, speedup with a 95% bootstrap CI, roofline position, flags."""
    cand = np.asarray(times.candidate_ms, dtype=np.float64)
    ref = np.asarray(times.reference_ms, dtype=np.float64)
    logs = np.log(np.maximum(ref, 1e-9) / np.maximum(cand, 1e-9))
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(logs, size=(resamples, len(logs)), replace=True), axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    speedup = float(np.exp(np.median(logs)))
    candidate_ms = float(np.median(cand))
    roof = position(workload, candidate_ms / 1e3, peaks) if workload and peaks else None
    reasons, note = [], ""
    if roof is not None and roof.implausible:
        reasons.append(f"implausible by roofline: {roof.implausible_reason()}: review before trusting")
    if speedup > bound:
        ratio = f"speedup {speedup:.1f}x exceeds the plausibility bound {bound:g}x"
        if roof is None:
            reasons.append(f"{ratio}: review before trusting")
        elif not roof.implausible:
            note = f"{ratio}, but is within this machine's roofline ({roof.fraction:.0%} of the roof)"
    noisy = {side: spread for side, spread in (("candidate", relative_iqr(cand)), ("reference", relative_iqr(ref)))
             if spread > NOISY_IQR}
    if noisy:
        reasons.append("noisy timing (IQR/median " + ", ".join(f"{k} {v:.0%}" for k, v in noisy.items())
                       + "): a loaded machine; rerun before trusting the speedup")
    return LatencyResult(candidate_ms=candidate_ms, reference_ms=float(np.median(ref)),
                         speedup=speedup, ci_low=float(np.exp(low)), ci_high=float(np.exp(high)),
                         rounds=len(cand), flagged=bool(reasons), flag_reason="; ".join(reasons),
                         roofline=roof, note=note)


def validate_times(timing: Timing, rounds: int, calls_per_round: int,
                   phase_wall_s: float) -> tuple[PairedTimes | None, str]:
    """Parent side: the child's report must be complete and fit inside the parent's wall clock
    (with the parent's own calls per round: a child's claim of fewer calls would hide replays)."""
    cand, ref = timing.candidate_ms, timing.reference_ms
    if len(cand) != rounds or len(ref) != rounds or min(cand + ref, default=0) < 0:
        return None, f"timing report has {len(cand)}/{len(ref)} rounds, expected {rounds}"
    claimed_s = (sum(cand) + sum(ref)) * calls_per_round / 1e3
    if claimed_s > phase_wall_s * 1.05 + 0.05:
        return None, f"reported times ({claimed_s:.2f} s) exceed the wall clock of the timing phase ({phase_wall_s:.2f} s)"
    return PairedTimes(cand, ref), ""


def audit_problem(audited: tuple[TrialOutputs, ...], timed_calls: int, checks: TrialChecks) -> str:
    """Parent side of the random-iteration audit (verifier.sandbox.audit): "" when the audited timed
    calls came back, as many as planned, each matching the reference for its planted inputs."""
    if len(audited) != expected_audits(timed_calls) or any(t.kind != "audit" for t in audited):
        return f"timing report has {len(audited)} audited calls, expected {expected_audits(timed_calls)}"
    if checks.mismatch:
        return ("the output of a timed call, audited at a secret random position, is wrong (the kernel skips, "
                f"replays or caches work while timed): {checks.mismatch}")
    return ""


def latency_gate(result: LatencyResult, seconds: float) -> GateResult:
    detail = (f"candidate {result.candidate_ms:.3f} ms, reference {result.reference_ms:.3f} ms, speedup "
              f"{result.speedup:.2f}x (95% CI {result.ci_low:.2f}-{result.ci_high:.2f}, {result.rounds} rounds)")
    if result.roofline is not None:
        detail += f"; {result.roofline.line()}"
    if result.flagged:
        detail += f"; FLAGGED: {result.flag_reason}"
    if result.note:
        detail += f"; note: {result.note}"
    return GateResult("latency", True, "", seconds, detail=detail)
