"""The latency summary flags implausible speedups and noisy measurements, and does not otherwise."""

from __future__ import annotations

from verifier.gates.latency import PairedTimes, summarise


def _times(cand, ref):
    return PairedTimes(tuple(cand), tuple(ref))


def test_steady_timings_are_not_flagged():
    result = summarise(_times([1.0, 1.01, 0.99, 1.0, 1.02], [2.0, 2.02, 1.98, 2.0, 2.01]), 500, bound=10.0)
    assert not result.flagged and result.flag_reason == ""
    assert 1.9 < result.speedup < 2.1 and result.ci_low <= result.speedup <= result.ci_high


def test_noisy_reference_is_flagged_for_review():
    result = summarise(_times([1.0] * 8, [0.4, 18.0, 0.5, 27.0, 0.4, 20.0, 15.0, 26.0]), 500, bound=10.0)
    assert result.flagged and "spread widely" in result.flag_reason and "reference" in result.flag_reason
    assert "rerun" not in result.flag_reason  # nothing the model (or a user) could act on
    assert "candidate" not in result.flag_reason


def test_implausible_speedup_is_flagged():
    result = summarise(_times([0.1] * 6, [5.0] * 6), 500, bound=10.0)
    assert result.flagged and "plausibility bound" in result.flag_reason
