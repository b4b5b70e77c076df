"""The latency gate: paired, interleaved timing in the child (candidate and reference in the same
process, same thread budget, fresh inputs every call, warm-up first) and the parent-side summary
(median per side, speedup = exp(median log(ref/cand)) over rounds, 95% percentile-bootstrap CI,
plausibility flag).

The child passes the backend's ``timer()`` (a synchronized wall clock on the CPU; CUDA events
after an L2 flush on a GPU, verifier.backends.gpu_timing) and ``fresh_inputs`` already placed on
the backend's device, so input generation and the host-to-device copy stay outside the timed call.

The random-iteration audit (verifier.sandbox.audit) plants two trials at secret timed calls; their
outputs, kept untimed, must match the reference (:func:`audit_problem`).

The plausibility bound (VerifySettings.plausibility_bound, default 10x, KernelBench's review
threshold) and noisy timing (either side's IQR/median above 25%) flag a speedup for review; neither
fails the gate.
"""

from __future__ import annotations

import statistics

import numpy as np

from verifier.gates.correctness import TrialChecks
from verifier.result import GateResult, LatencyResult
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


def summarise(times: PairedTimes, resamples: int, bound: float, seed: int = 0) -> LatencyResult:
    """Parent side: median per side, speedup with a 95% bootstrap CI, plausibility flag."""
    cand = np.asarray(times.candidate_ms, dtype=np.float64)
    ref = np.asarray(times.reference_ms, dtype=np.float64)
    logs = np.log(np.maximum(ref, 1e-9) / np.maximum(cand, 1e-9))
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(logs, size=(resamples, len(logs)), replace=True), axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    speedup = float(np.exp(np.median(logs)))
    reasons = []
    if speedup > bound:
        reasons.append(f"speedup {speedup:.1f}x exceeds the plausibility bound {bound:g}x: review before trusting")
    noisy = {side: spread for side, spread in (("candidate", relative_iqr(cand)), ("reference", relative_iqr(ref)))
             if spread > NOISY_IQR}
    if noisy:
        reasons.append("noisy timing (IQR/median " + ", ".join(f"{k} {v:.0%}" for k, v in noisy.items())
                       + "): a loaded machine; rerun before trusting the speedup")
    flagged, reason = bool(reasons), "; ".join(reasons)
    return LatencyResult(candidate_ms=float(np.median(cand)), reference_ms=float(np.median(ref)),
                         speedup=speedup, ci_low=float(np.exp(low)), ci_high=float(np.exp(high)),
                         rounds=len(cand), flagged=flagged, flag_reason=reason)


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
    if result.flagged:
        detail += f"; FLAGGED: {result.flag_reason}"
    return GateResult("latency", True, "", seconds, detail=detail)
