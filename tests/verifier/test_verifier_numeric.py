"""The monitor's numeric checks: correctness comparison and latency statistics."""

from __future__ import annotations

import numpy as np
import pytest

from verifier.gates.correctness import Tolerance, check_trials, compare_trial
from verifier.gates.latency import PairedTimes, summarise
from verifier.gates.trial_data import ReferenceOutputs, TrialOutputs

TOL = Tolerance(1e-4, 1e-4, 0.01)


def _cand(arr, dist="normal", kind="check", index=0):
    arr = np.asarray(arr, dtype=np.float32)
    return TrialOutputs(index, kind, dist, (str(arr.dtype),), (arr,))


def _ref(arr, trivial=None, index=0):
    arr = np.asarray(arr, dtype=np.float32)
    return ReferenceOutputs(index, (str(arr.dtype),), (arr,), (trivial or {},))


def test_exact_match_passes_and_mismatch_is_localised():
    ref = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    assert compare_trial(_cand(ref), _ref(ref), TOL).mismatch == ""
    bad = ref.copy()
    bad[2, 1] = 5.0
    message = compare_trial(_cand(bad), _ref(ref), TOL).mismatch
    assert "index (2, 1)" in message and "got 5" in message


def test_nan_output_is_not_a_pass():
    ref = np.ones(4, dtype=np.float32)
    assert "non-finite" in compare_trial(_cand(np.full(4, np.nan)), _ref(ref), TOL).mismatch


def test_shape_and_dtype_must_match_exactly():
    ref = np.ones((2, 2), dtype=np.float32)
    assert "shape" in compare_trial(_cand(np.ones(4)), _ref(ref), TOL).mismatch
    cand = TrialOutputs(0, "check", "normal", ("float64",), (np.ones((2, 2)),))
    assert "dtype" in compare_trial(cand, _ref(ref), TOL).mismatch


def test_trivial_output_check_rejects_near_zero_answers():
    ref = np.full(1000, 2.4e-4, dtype=np.float32) + np.linspace(0, 1e-5, 1000, dtype=np.float32)
    loose = Tolerance(1e-2, 1.0, 0.01)
    zeros = np.zeros(1000, dtype=np.float32)
    trivial = {"zeros": float(np.linalg.norm(ref)), "mean": float(np.linalg.norm(ref - ref.mean()))}
    assert "trivial output" in compare_trial(_cand(zeros), _ref(ref, trivial=trivial), loose).mismatch


def test_nonfinite_reference_skips_other_distributions_but_not_the_task_one():
    ref = np.array([np.inf, 1.0], dtype=np.float32)
    assert compare_trial(_cand([0.0, 1.0], "large"), _ref(ref), TOL).skipped
    assert "expected inf" in compare_trial(_cand([0.0, 1.0], "task"), _ref(ref), TOL).mismatch
    assert compare_trial(_cand([np.inf, 1.0], "task"), _ref(ref), TOL) == compare_trial(_cand(ref, "task"), _ref(ref), TOL)


def test_trial_checks_count_skips_and_name_the_perturbation_probe():
    ref = np.array([np.inf, 1.0], dtype=np.float32)
    refs = {0: _ref(ref, index=0), 1: _ref(np.ones(2), index=1), 2: _ref(np.ones(2), index=2)}
    checks = check_trials([_cand([0.0, 1.0], "large", index=0), _cand(np.ones(2), index=1)], refs.__getitem__, TOL)
    assert (checks.checked, checks.skipped, checks.mismatch) == (1, 1, "")
    assert checks.gate(0.1).passed and "1 skipped" in checks.gate(0.1).detail
    replay = check_trials([_cand(np.zeros(2), "task", kind="perturb", index=2)], refs.__getitem__, TOL)
    assert "perturbed-input probe" in replay.mismatch and "replayed or cached" in replay.mismatch
    assert not replay.gate(0.1).passed


def test_speedup_ci_covers_the_true_ratio():
    rng = np.random.default_rng(0)
    ref = 2.0 * (1 + 0.05 * rng.standard_normal(40))
    cand = 1.0 * (1 + 0.05 * rng.standard_normal(40))
    result = summarise(PairedTimes(tuple(cand), tuple(ref)), 2000, 10.0)
    assert result.ci_low < 2.0 < result.ci_high and 1.8 < result.speedup < 2.2 and not result.flagged


def test_implausible_speedup_is_flagged():
    result = summarise(PairedTimes((0.01,) * 10, (1.0,) * 10), 500, 10.0)
    assert result.flagged and "plausibility" in result.flag_reason


@pytest.mark.parametrize("seed", range(4))
def test_the_chunked_comparison_answers_as_the_whole_array_one(seed):
    from verifier.gates import elementwise

    rng = np.random.default_rng(seed)
    n = 3 * elementwise.CHUNK + 17  # chunk boundaries crossed, a ragged last chunk
    r = (rng.standard_normal(n) * 10).astype(np.float32)
    c = r + rng.standard_normal(n).astype(np.float32) * 1e-4
    planted = rng.choice(n, 5, replace=False)
    c[planted[:3]] += 1.0  # out of tolerance
    r[planted[3]] = np.inf  # masked out where the reference is not finite
    c[planted[4]] = np.nan  # a non-finite candidate value where the reference is finite
    r64, c64 = r.astype(np.float64), c.astype(np.float64)
    mask = np.isfinite(r64)
    cm, rm = np.where(mask, c64, 0.0), np.where(mask, r64, 0.0)
    scale = max(1.0, float(np.abs(rm).max()))
    out = ~(np.abs(cm - rm) <= 1e-3 * scale + 1e-3 * np.abs(rm))
    found = elementwise.compare(c, r, None, 1e-3, 1e-3)
    assert found.nonfinite_at == planted[4]
    assert found.bad == int(out.sum()) == 4 and found.bad_at == int(np.argmax(out))
    finite = mask & np.isfinite(c64)
    assert found.norm == pytest.approx(float(np.linalg.norm(rm)), rel=1e-12)
    clean = elementwise.compare(np.where(finite, c, 0), np.where(finite, r, 0), finite, 1e-3, 1e-3)
    assert clean.nonfinite_at is None and clean.bad == 3
    assert clean.err == pytest.approx(float(np.linalg.norm(np.where(finite, c64 - r64, 0.0))), rel=1e-9)
    assert clean.max_abs_error == pytest.approx(float(np.abs(np.where(finite, c64 - r64, 0.0)).max()))
    assert elementwise.compare(c, r, None, 1e-3, 1e-3, stop_at_nonfinite=True).bad_at is None


def test_the_trivial_outputs_errors_are_their_l2_distances():
    from verifier.gates.elementwise import CHUNK
    from verifier.sandbox.reference_worker import trivial_errors

    r = np.random.default_rng(5).standard_normal((3, CHUNK + 11)).astype(np.float32)
    x = r + 0.5
    r64 = r.astype(np.float64)
    errors = trivial_errors(r, [np.ones(4), x])
    assert errors["zeros"] == pytest.approx(np.linalg.norm(r64), rel=1e-12)
    assert errors["mean"] == pytest.approx(np.linalg.norm(r64 - r64.mean()), rel=1e-12)
    assert errors["input copy"] == pytest.approx(np.linalg.norm(r64 - x.astype(np.float64)), rel=1e-12)
    r[0, 0] = np.nan
    assert trivial_errors(r, [x]) == {}  # a non-finite reference: no trivial output to compare with
