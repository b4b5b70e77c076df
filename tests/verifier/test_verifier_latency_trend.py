"""A candidate whose cost relative to the reference keeps rising through the rounds has no steady speed:
its figure is not trusted, the rise named (verifier.gates.trend). Noise, load that moves both sides, a
warm-up and a cost that settles in the first rounds are not a rise."""

from __future__ import annotations

import numpy as np

from verifier.gates.latency import PairedTimes, summarise
from verifier.gates.trend import LEAST_ROUNDS, step, trend

RNG_SEED = 20261129


def _noisy(levels: np.ndarray, spread: float, rng: np.random.Generator) -> np.ndarray:
    return levels * np.exp(rng.normal(0.0, spread, size=len(levels)))


def test_a_cost_rising_through_every_round_is_not_trusted_and_named():
    """The bounded-history attack's shape (latency_attack_cases: 0.94 -> 2.05 ms over 16 rounds, the
    reference steady at 0.33 ms), with the spread of a loaded machine."""
    rng = np.random.default_rng(RNG_SEED)
    cand = _noisy(np.linspace(0.94, 2.05, 16), 0.08, rng)
    ref = _noisy(np.full(16, 0.33), 0.08, rng)
    result = summarise(PairedTimes(tuple(cand), tuple(ref)), 500, bound=10.0)
    assert not result.trusted and result.flagged
    assert "kept rising through the rounds" in result.untrusted_reason
    assert "over 16 rounds" in result.untrusted_reason and "no steady speed" in result.untrusted_reason


def test_steady_noise_is_almost_never_a_rise():
    """Rounds with no trend, spread as on a loaded machine (IQR/median ~40%): fewer than 1 in 200 read as
    rising (the false refusals of trust an honest kernel would meet)."""
    rng = np.random.default_rng(RNG_SEED)
    rising = sum(trend(_noisy(np.ones(n), 0.3, rng), _noisy(np.ones(n), 0.3, rng)).rising
                 for n in (10, 12, 16) for _ in range(1000))
    assert rising < 3000 / 200, rising


def test_load_that_rises_on_both_sides_is_not_the_candidates_rise():
    rng = np.random.default_rng(RNG_SEED)
    load = np.linspace(1.0, 3.0, 16)  # a burner starting on the machine: every window slower, both sides
    result = summarise(PairedTimes(tuple(_noisy(0.5 * load, 0.05, rng)), tuple(_noisy(1.0 * load, 0.05, rng))),
                       500, bound=10.0)
    assert result.trusted, result.untrusted_reason
    assert 1.8 < result.speedup < 2.2


def test_a_warm_up_or_a_cost_that_settles_early_is_not_a_rise():
    rng = np.random.default_rng(RNG_SEED)
    ref = _noisy(np.ones(16), 0.05, rng)
    falling = _noisy(np.concatenate([np.linspace(2.0, 1.0, 4), np.ones(12)]), 0.05, rng)
    settled = _noisy(np.concatenate([np.linspace(0.4, 1.0, 4), np.ones(12)]), 0.05, rng)  # full within 4 rounds
    assert not trend(falling, ref).rising
    found = trend(settled, ref)
    assert not found.rising and found.tau < 0.6, found


def test_too_few_rounds_are_not_judged():
    cand = np.linspace(1.0, 3.0, LEAST_ROUNDS - 1)
    assert trend(cand, np.ones_like(cand)).tau == 1.0
    assert not trend(cand, np.ones_like(cand)).rising
    assert trend(np.linspace(1.0, 3.0, LEAST_ROUNDS), np.ones(LEAST_ROUNDS)).rising


def test_a_cost_that_steps_up_part_way_is_not_trusted_and_named():
    """A cache that fills after some hundred calls and then pays on every call: flat before the step and
    after it (Kendall's tau stays low), the median of the rounds half way between the levels."""
    rng = np.random.default_rng(RNG_SEED)
    ref = _noisy(np.full(16, 0.5), 0.05, rng)
    half = _noisy(0.5 * np.r_[np.ones(8), np.full(8, 1.8)], 0.05, rng)
    assert not trend(half, ref).rising
    result = summarise(PairedTimes(tuple(half), tuple(ref)), 500, bound=10.0)
    assert not result.trusted and "stepped up part way through the rounds" in result.untrusted_reason
    assert "in rounds 1-8" in result.untrusted_reason and "rounds 9-16" in result.untrusted_reason
    late = _noisy(0.5 * np.r_[np.ones(11), np.full(5, 1.5)], 0.05, rng)  # the last five rounds
    found = step(late, ref)
    assert found.stepped and found.at == 11, found


def test_a_step_early_enough_for_the_median_to_report_it_is_not_a_step():
    """Stepping up after a third of the rounds, or settling in the first few: the median is the later level
    already, which is what a user's loop reads."""
    rng = np.random.default_rng(RNG_SEED)
    ref = _noisy(np.ones(16), 0.05, rng)
    for levels in (np.r_[np.ones(5), np.full(11, 1.6)], np.r_[np.linspace(0.4, 1.0, 4), np.ones(12)]):
        found = step(_noisy(levels, 0.05, rng), ref)
        assert not found.stepped and found.above_median < 0.1, found


def test_steady_noise_is_almost_never_a_step():
    """Rounds with no change, spread as on a loaded machine: fewer than 1 in 300 read as a step."""
    rng = np.random.default_rng(RNG_SEED)
    stepped = sum(step(_noisy(np.ones(n), 0.3, rng), _noisy(np.ones(n), 0.3, rng)).stepped
                  for n in (10, 12, 16, 24) for _ in range(750))
    assert stepped < 3000 / 300, stepped
