"""The correctness gate (parent side, numpy only): candidate outputs from the sandbox against
reference outputs from the separate reference worker.

Per output of every trial, all must hold: same count, dtype and shape; finite where the
reference is finite (trials whose reference is non-finite are skipped unless they use the task's
own inputs, where the non-finite pattern must match); elementwise ``|c - r| <= atol * max(1,
max|r|) + rtol * |r|``; relative L2 error ``<= rtol``; and the scale-aware check: the error is at
most ``trivial_margin`` times the error of trivial outputs (zeros, the mean, an input copy), unless it
is within a few ulps of the output's norm (:data:`PRECISION_FLOOR_ULPS`); on
the correctness trials, the float64 precision check (verifier.gates.fp64_check).
The first mismatch is localised (trial, distribution, output, index, expected, got).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from verifier.gates import elementwise, fp64_check
from verifier.result import GateResult
from verifier.gates.trial_data import ReferenceOutputs, TrialOutputs

PROBE_NOTE = "output did not follow an in-place change of the input: replayed or cached result"
# A candidate within a few ulps (in norm) of the reference passes the trivial-output check whatever the
# trivial outputs' own errors: on small inputs tanh(x) is x to x^3/3, so the input copy is itself within
# 1e-7 of the reference and no honest float32 tanh is 100x closer than that.
PRECISION_FLOOR_ULPS = 8.0


def _eps(c: np.ndarray) -> float:
    return float(np.finfo(c.dtype).eps) if np.issubdtype(c.dtype, np.floating) else 0.0


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    trivial_margin: float


@dataclass(frozen=True)
class TrialCheck:
    """One trial compared: matched, skipped (not meaningful for this op), or a one-line mismatch."""

    index: int
    mismatch: str = ""
    skipped: bool = False
    fp64_ratio: float | None = None  # worst float64 ratio of the trial's outputs (None: not checked)


@dataclass(frozen=True)
class TrialChecks:
    """Every trial of a phase compared, stopping at the first mismatch."""

    checked: int
    skipped: int
    mismatch: str = ""
    fp64_worst: float | None = None  # worst float64 ratio over the trials (None: no float64 reference)
    fp64_note: str = ""  # why the reference worker sent no float64 reference

    def gate(self, seconds: float) -> GateResult:
        gate = correctness_gate(self.mismatch or None, seconds, self.checked, self.skipped, self.fp64_worst)
        if not self.fp64_note:
            return gate
        return replace(gate, detail=f"{gate.detail}; float64 check skipped: {self.fp64_note}")


def check_trials(trials: Sequence[TrialOutputs], reference: Callable[[int], ReferenceOutputs],
                 tol: Tolerance) -> TrialChecks:
    checked = skipped = 0
    worst: float | None = None
    note = ""
    for cand in trials:
        ref = reference(cand.index)
        check = compare_trial(cand, ref, tol)
        if check.mismatch:
            probe = f" ({PROBE_NOTE})" if cand.kind == "perturb" else ""
            return TrialChecks(checked, skipped, check.mismatch + probe, worst)
        skipped += check.skipped
        checked += not check.skipped
        if check.fp64_ratio is not None:
            worst = max(worst or 0.0, check.fp64_ratio)
        note = note or ref.fp64.note
    return TrialChecks(checked, skipped, fp64_worst=worst, fp64_note=note)


def compare_trial(cand: TrialOutputs, ref: ReferenceOutputs, tol: Tolerance) -> TrialCheck:
    where = f"trial {cand.index} ({_label(cand)} inputs)"
    if len(cand.arrays) != len(ref.arrays):
        return TrialCheck(cand.index, f"{where}: returned {len(cand.arrays)} outputs, expected {len(ref.arrays)}")
    for k, (c, r, cd, rd) in enumerate(zip(cand.arrays, ref.arrays, cand.dtypes, ref.dtypes)):
        label = f"{where}, output {k}"
        if cd != rd:
            return TrialCheck(cand.index, f"{label}: dtype {cd}, expected {rd}")
        if c.shape != r.shape:
            return TrialCheck(cand.index, f"{label}: shape {tuple(c.shape)}, expected {tuple(r.shape)}")
        r_finite = np.isfinite(r)
        if not r_finite.all():
            if cand.distribution != "task":  # e.g. exp of large inputs overflows: says nothing here
                return TrialCheck(cand.index, skipped=True)
            mismatch = _nonfinite_mismatch(c, r, r_finite)
            if mismatch:
                return TrialCheck(cand.index, f"{label}: {mismatch}")
        problem = _compare_values(c, r, r_finite, tol, ref.trivial[k] if k < len(ref.trivial) else {})
        if problem:
            return TrialCheck(cand.index, f"{label}: {problem}")
    if not ref.fp64.corrections:  # sent for the check trials (verifier.sandbox.reference_worker)
        return TrialCheck(cand.index)
    precision = fp64_check.check_outputs(cand.arrays, ref)
    return TrialCheck(cand.index, f"{where}, {precision.mismatch}" if precision.mismatch else "",
                      fp64_ratio=precision.ratio)


def _label(cand: TrialOutputs) -> str:
    return "perturbed-input probe" if cand.kind == "perturb" else cand.distribution


def _nonfinite_mismatch(c: np.ndarray, r: np.ndarray, r_finite: np.ndarray) -> str:
    bad = ~r_finite & ~((np.isnan(c) & np.isnan(r)) | (c == r))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"at index {idx}: expected {float(r[idx])}, got {float(c[idx])}"
    return ""


def _compare_values(c: np.ndarray, r: np.ndarray, mask: np.ndarray, tol: Tolerance, trivial: dict) -> str:
    where = lambda flat: tuple(int(i) for i in np.unravel_index(flat, c.shape))  # noqa: E731
    found = elementwise.compare(c, r, mask, tol.atol, tol.rtol, stop_at_nonfinite=True)
    if found.nonfinite_at is not None:
        flat = found.nonfinite_at
        return (f"non-finite value at index {where(flat)}: expected {float(r.reshape(-1)[flat]):.6g}, "
                f"got {float(c.reshape(-1)[flat])}")
    if found.bad_at is not None:
        flat = found.bad_at
        return (f"mismatch at index {where(flat)}: expected {float(r.reshape(-1)[flat]):.6g}, got "
                f"{float(c.reshape(-1)[flat]):.6g} ({found.bad} of {r.size} elements out of tolerance, max abs "
                f"error {found.max_abs_error:.3g})")
    err, norm = found.err, found.norm
    if norm > 0 and err / norm > tol.rtol:
        return f"relative L2 error {err / norm:.3g} exceeds {tol.rtol:g}"
    positive = {name: e for name, e in trivial.items() if e > 0}
    if positive:
        name, best = min(positive.items(), key=lambda kv: kv[1])
        floor = PRECISION_FLOOR_ULPS * _eps(c) * norm  # as exact as the output's precision allows: no trivial mimic
        if err > tol.trivial_margin * best and err > floor:
            return (f"error {err:.3g} is not far below that of a trivial output ({name}: {best:.3g}); "
                    f"it must be at most {tol.trivial_margin:g}x of it")
    return ""


def correctness_gate(mismatch: str | None, seconds: float, checked: int, skipped: int,
                     fp64_worst: float | None = None) -> GateResult:
    if mismatch:
        return GateResult("correctness", False, mismatch[:300], seconds, detail=mismatch)
    note = f"{checked} trials matched" + (f", {skipped} skipped (reference non-finite)" if skipped else "")
    if fp64_worst is not None:
        note += f"; float64 check: worst error ratio {fp64_worst:.1f}x (limit {fp64_check.MAX_RATIO:g}x)"
    return GateResult("correctness", True, "", seconds, detail=note)
