"""Rewards and the online normaliser, as specified (paper Eq. 5, 6 and PopArt-style z-scores)."""

from __future__ import annotations

import math
import statistics

from hypothesis import given
from hypothesis import strategies as st

from evokernel.agent.rewards import RunningStats, draft_reward, normalise_refine_reward, refine_reward


def test_draft_reward_is_plus_minus_one():
    assert draft_reward(True) == 1.0
    assert draft_reward(False) == -1.0


def test_refine_reward_is_tanh_of_log_ratio():
    assert refine_reward(True, 2.0, 1.0) == math.tanh(math.log(2.0))
    assert refine_reward(True, 1.0, 2.0) == math.tanh(-math.log(2.0))
    assert refine_reward(True, 1.0, 1.0) == 0.0
    assert refine_reward(False, 1.0, 0.5) == -1.0


def test_refine_reward_without_latency_is_neutral():
    assert refine_reward(True, None, 1.0) == 0.0
    assert refine_reward(True, 1.0, None) == 0.0


@given(st.floats(1e-4, 1e4), st.floats(1e-4, 1e4))
def test_refine_reward_is_bounded_and_signed(best, new):
    r = refine_reward(True, best, new)
    assert -1.0 <= r <= 1.0
    if new < best * 0.999:
        assert r > 0
    if new > best * 1.001:
        assert r < 0


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=60))
def test_running_stats_match_batch_statistics(values):
    stats = RunningStats()
    for v in values:
        stats = stats.add(v)
    assert math.isclose(stats.mean, statistics.fmean(values), abs_tol=1e-9)
    assert math.isclose(stats.std, statistics.stdev(values), abs_tol=1e-7)


def test_normalisation_is_identity_until_two_samples_then_z_score():
    r_hat, stats = normalise_refine_reward(RunningStats(), 0.5)
    assert r_hat == 0.5 and stats.count == 1
    r_hat, stats = normalise_refine_reward(stats, -0.5)
    expected = (-0.5 - stats.mean) / stats.std
    assert math.isclose(r_hat, expected)
    assert r_hat < 0


def test_normalised_rewards_are_clipped_and_std_floored():
    stats = RunningStats()
    for _ in range(10):
        stats = stats.add(0.0)
    assert stats.normalise(1.0) == 3.0  # std 0 is floored, the z-score clipped to 3
    assert stats.normalise(-1.0) == -3.0
