"""Parent-side numeric checks: correctness comparison and latency statistics."""

from __future__ import annotations

import numpy as np

from verifier.gates.correctness import SKIPPED, Tolerance, TrialOutputs, compare_trial
from verifier.gates.latency import PairedTimes, summarise, validate_times

TOL = Tolerance(1e-4, 1e-4, 0.01)


def _trial(arr, dist="normal", trivial=None):
    arr = np.asarray(arr, dtype=np.float32)
    return TrialOutputs(0, dist, (str(arr.dtype),), (arr,), (trivial or {},))


def test_exact_match_passes_and_mismatch_is_localised():
    ref = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    assert compare_trial(_trial(ref), _trial(ref), TOL) is None
    bad = ref.copy()
    bad[2, 1] = 5.0
    message = compare_trial(_trial(bad), _trial(ref), TOL)
    assert "index (2, 1)" in message and "got 5" in message


def test_nan_output_is_not_a_pass():
    ref = np.ones(4, dtype=np.float32)
    assert "non-finite" in compare_trial(_trial(np.full(4, np.nan)), _trial(ref), TOL)


def test_shape_and_dtype_must_match_exactly():
    ref = np.ones((2, 2), dtype=np.float32)
    assert "shape" in compare_trial(_trial(np.ones(4)), _trial(ref), TOL)
    cand = TrialOutputs(0, "normal", ("float64",), (np.ones((2, 2)),))
    assert "dtype" in compare_trial(cand, _trial(ref), TOL)


def test_trivial_output_check_rejects_near_zero_answers():
    ref = np.full(1000, 2.4e-4, dtype=np.float32) + np.linspace(0, 1e-5, 1000, dtype=np.float32)
    loose = Tolerance(1e-2, 1.0, 0.01)
    zeros = np.zeros(1000, dtype=np.float32)
    trivial = {"zeros": float(np.linalg.norm(ref)), "mean": float(np.linalg.norm(ref - ref.mean()))}
    assert "trivial output" in compare_trial(_trial(zeros), _trial(ref, trivial=trivial), loose)


def test_nonfinite_reference_skips_other_distributions_but_not_the_task_one():
    ref = np.array([np.inf, 1.0], dtype=np.float32)
    assert compare_trial(_trial([0.0, 1.0], "large"), _trial(ref, "large"), TOL) == SKIPPED
    assert "expected inf" in compare_trial(_trial([0.0, 1.0], "task"), _trial(ref, "task"), TOL)
    assert compare_trial(_trial([np.inf, 1.0], "task"), _trial(ref, "task"), TOL) is None


def test_speedup_ci_covers_the_true_ratio():
    rng = np.random.default_rng(0)
    ref = 2.0 * (1 + 0.05 * rng.standard_normal(40))
    cand = 1.0 * (1 + 0.05 * rng.standard_normal(40))
    result = summarise(PairedTimes(tuple(cand), tuple(ref)), 2000, 10.0)
    assert result.ci_low < 2.0 < result.ci_high and 1.8 < result.speedup < 2.2 and not result.flagged


def test_implausible_speedup_is_flagged():
    result = summarise(PairedTimes((0.01,) * 10, (1.0,) * 10), 500, 10.0)
    assert result.flagged and "plausibility" in result.flag_reason


def test_reported_times_must_fit_the_wall_clock():
    header = {"candidate_ms": [100.0] * 5, "reference_ms": [100.0] * 5, "calls_per_round": 1}
    assert validate_times(header, 5, phase_wall_s=2.0)[0] is not None
    times, problem = validate_times(header, 5, phase_wall_s=0.5)
    assert times is None and "wall clock" in problem
    assert validate_times({"candidate_ms": [1.0]}, 5, 1.0)[0] is None
