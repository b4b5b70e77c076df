"""verifier.monitor.output_checks.runs_within: a window's calls read as runs judged at once clear exactly the
calls that the call-by-call comparison (:func:`mismatch`) passes, whatever is wrong with the others (an element
out of tolerance, NaN or infinity where the reference is finite, a reference that is not finite, integer and
half-precision outputs, calls read whole or with another shape), and check_round still names the first wrong call
with mismatch's own words."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from verifier.gates.correctness import Tolerance
from verifier.monitor import output_checks
from verifier.monitor.correctness_phase import IntegrityProblem
from verifier.monitor.output_checks import check_round, mismatch, runs_within
from verifier.monitor.remote_outputs import RUN, RUNS, Sampled

N = RUNS * RUN
TOL = Tolerance(1e-4, 1e-4, 0.0)


def _window(calls: int, rng: np.random.Generator, dtype=np.float32, outputs: int = 1):
    ref, cand, sampled = [], [], []
    for _ in range(calls):
        r = [(rng.standard_normal(N) * rng.choice([1e-3, 1.0, 1e3])).astype(dtype) for _ in range(outputs)]
        ref.append(tuple(r))
        cand.append(tuple(x.copy() for x in r))
        sampled.append(tuple(Sampled((64, 1024), tuple(range(0, RUNS * 4000, 4000))) for _ in range(outputs)))
    return cand, ref, sampled


def _answer(outputs, sampled):
    return SimpleNamespace(outputs=tuple(outputs), sampled=tuple(sampled))


def _spoil(cand, ref, sampled, rng):
    """Something different wrong (or harmlessly odd) with many of the calls."""
    kinds = ["ulp", "bad", "nan", "inf", "ref_nan", "ref_inf_cand_inf", "whole", "shape", "tiny_scale", "none"]
    for c in range(len(cand)):
        kind = kinds[int(rng.integers(len(kinds)))]
        out = list(cand[c])
        o = out[0]
        i = int(rng.integers(N))
        if kind == "ulp":
            o[i] = np.nextafter(o[i], np.float32(np.inf), dtype=o.dtype)
        elif kind == "bad":
            o[i] = o[i] + np.float32(1.0) + abs(o[i])
        elif kind == "nan":
            o[i] = np.nan
        elif kind == "inf":
            o[i] = np.inf
        elif kind == "ref_nan":
            ref[c][0][i] = np.nan
        elif kind == "ref_inf_cand_inf":
            ref[c][0][i], o[i] = np.inf, np.inf
        elif kind == "whole":
            sampled[c] = (None,) + tuple(sampled[c][1:])
        elif kind == "shape":
            sampled[c] = (Sampled((32, 2048), sampled[c][0].starts),) + tuple(sampled[c][1:])
        elif kind == "tiny_scale":  # within atol * 1 only where the scale's floor of 1 applies
            o[i] = o[i] + np.float32(0.5e-4)
        cand[c] = tuple(out)


@pytest.mark.parametrize("seed", range(6))
def test_runs_judged_at_once_clear_exactly_the_calls_mismatch_passes(seed, monkeypatch):
    if seed % 3 == 0:  # windows judged in several batches
        monkeypatch.setattr(output_checks, "BATCH_ROWS", 5)
    rng = np.random.default_rng(seed)
    cand, ref, sampled = _window(48, rng, outputs=1 + seed % 2)
    _spoil(cand, ref, sampled, rng)
    ref_sampled = [tuple(Sampled((64, 1024), s.starts) if s is not None else Sampled((64, 1024), tuple(
        range(0, RUNS * 4000, 4000))) for s in call) for call in sampled]
    cleared = runs_within(_answer(cand, sampled), _answer(ref, ref_sampled), TOL)
    passing = {c for c in range(len(cand)) if mismatch(cand[c], ref[c], TOL, None, sampled[c], ref_sampled[c]) == ""}
    assert cleared <= passing
    eligible = {c for c in range(len(cand)) if all(s is not None and s.shape == (64, 1024) for s in sampled[c])}
    assert cleared == passing & eligible
    assert 0 < len(cleared) < len(cand)


@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.float64, np.bool_])
def test_other_dtypes_are_judged_as_mismatch_judges_them(dtype):
    rng = np.random.default_rng(7)
    ref = [(rng.integers(-50, 50, N).astype(dtype),) for _ in range(8)]
    cand = [(r[0].copy(),) for r in ref]
    if dtype is np.bool_:
        cand[3][0][5] = not cand[3][0][5]
    else:
        cand[3][0][5] = cand[3][0][5] + 1
    sampled = [(Sampled((N,), tuple(range(0, RUNS * RUN, RUN))),) for _ in range(8)]
    cleared = runs_within(_answer(cand, sampled), _answer(ref, sampled), TOL)
    assert cleared == {c for c in range(8) if mismatch(cand[c], ref[c], TOL, None, sampled[c], sampled[c]) == ""}


def test_check_round_names_the_first_wrong_call_in_mismatchs_words():
    rng = np.random.default_rng(3)
    cand, ref, sampled = _window(20, rng)
    cand[4][0][9] = cand[4][0][9] + np.float32(5.0)
    cand[11][0][2] = np.nan
    expected = mismatch(cand[4], ref[4], TOL, None, sampled[4], sampled[4])
    turns = [SimpleNamespace(side=0, answer=_answer(ref, sampled)), SimpleNamespace(side=1, answer=_answer(cand, sampled))]
    sides = [SimpleNamespace(name="reference"), SimpleNamespace(name="candidate")]
    with pytest.raises(IntegrityProblem) as raised:
        check_round(turns, sides, TOL, None, 0, np.random.default_rng(0))
    assert str(raised.value).endswith(expected) and expected.startswith("output 0: expected")
    cand[4] = (ref[4][0].copy(),)
    cand[11] = (ref[11][0].copy(),)
    check_round(turns[:1] + [SimpleNamespace(side=1, answer=_answer(cand, sampled))], sides, TOL, None, 0,
                np.random.default_rng(0))
