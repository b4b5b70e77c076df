"""Whether a candidate's cost per call kept rising through the latency rounds (its own property, not the
machine's): the rounds' relative cost, log(candidate / reference) in the order they were played, against
the round index.

A kernel that slows with use (a history, cache or allocation that grows with every call) is fast in the
first calls a verifier plays and slow in the hundreds a user's loop makes; the median of the rounds then
reports the level it had half way (tests/verifier/latency_attack_cases.py: a call rising from 0.94 to
2.05 ms over 16 rounds read 2.3 times its steady state). A steady figure does not exist for such a kernel
within any number of rounds the verifier can play, so the figure is not trusted, with the rise named.

The test is on the ratio, not on either side's time: the sides are timed in the same round, one after the
other, so load that rises on the machine moves both. Kendall's tau of the relative cost against the round
index must be at least ``TAU`` (with iid rounds P(tau >= 0.6) is about 0.0006 for 16 rounds and 0.008 for
10) and the rise across the rounds (the Theil-Sen slope over the rounds played) at least ``RISE``; fewer
than ``LEAST_ROUNDS`` rounds are not judged (a phase ends early only once its figure has settled).

A cost that steps up part way (a cache that fills after some hundred calls, then pays on every call) is
not a steady trend: the rounds before the step and after it are each flat, and tau stays low (a step half
way reads about 0.5). The step test takes, of every split of the rounds, the one whose later rounds rank
least likely that far above its earlier ones (a one-sided rank statistic per split), finds how likely so
small a chance is with rounds that do not change by permuting the rounds (``STEP_PERMUTATIONS`` orders,
once per number of rounds), and declares a step where that is at most ``STEP_P`` and the rounds from the
step on cost at least ``RISE`` more than the median the figure reports. A cost that settles within the
first rounds is a step up too, but the median already reports its later level, so it is not a step here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

LEAST_ROUNDS = 10
TAU = 0.6  # Kendall's tau of the relative cost against the round index
RISE = 0.25  # the relative cost's rise from the first round to the last, on the Theil-Sen line
STEP_SHORTEST = 3  # rounds on each side of a step
STEP_P = 0.002  # how often rounds that do not change show a split as unlikely, at most
STEP_PERMUTATIONS = 20000


@dataclass(frozen=True)
class Trend:
    """The relative cost's trend across the rounds."""

    rounds: int
    tau: float  # Kendall's tau (tau-a) of log(candidate / reference) against the round index
    rise: float  # exp(Theil-Sen slope x (rounds - 1)) - 1: the rise from the first round to the last

    @property
    def rising(self) -> bool:
        return self.rounds >= LEAST_ROUNDS and self.tau >= TAU and self.rise >= RISE


@dataclass(frozen=True)
class Step:
    """The likeliest upward step of the relative cost."""

    at: int  # the first round of the later level (0 when there are too few rounds to split)
    chance: float  # how often rounds that do not change show a split as unlikely as its least likely one
    above_median: float  # the later rounds' median relative cost over all rounds' median, less 1

    @property
    def stepped(self) -> bool:
        return self.at > 0 and self.chance <= STEP_P and self.above_median >= RISE


def _relative(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> np.ndarray:
    """Each round's relative cost, candidate / reference (a zero time read as 1 ns)."""
    return np.maximum(candidate_ms, 1e-9) / np.maximum(reference_ms, 1e-9)


def trend(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> Trend:
    """The trend of the candidate's cost relative to the reference's, rounds in the order played."""
    cost = np.log(_relative(candidate_ms, reference_ms))
    n = len(cost)
    if n < 2:
        return Trend(n, 0.0, 0.0)
    i, j = np.triu_indices(n, k=1)
    steps = cost[j] - cost[i]
    tau = float(np.sign(steps).sum() / len(steps))
    slope = float(np.median(steps / (j - i)))
    return Trend(n, tau, float(np.expm1(slope * (n - 1))))


def step(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> Step:
    """The likeliest upward step of the candidate's cost relative to the reference's."""
    ratio = _relative(candidate_ms, reference_ms)
    n = len(ratio)
    if n < LEAST_ROUNDS:
        return Step(0, 1.0, 0.0)
    null_scores, null_least = _null(n)
    scores = _split_scores(np.argsort(np.argsort(ratio, kind="stable"), kind="stable")[None, :])[0]
    chances = (1 + np.count_nonzero(null_scores >= scores - 1e-9, axis=0)) / (len(null_scores) + 1)
    best = int(np.argmin(chances))
    chance = float((1 + np.count_nonzero(null_least <= chances[best] + 1e-12)) / (len(null_least) + 1))
    at = best + STEP_SHORTEST
    return Step(at, chance, float(np.median(ratio[at:]) / np.median(ratio) - 1))


def _split_scores(ranks: np.ndarray) -> np.ndarray:
    """Per row of ranks (0..n-1), each split's one-sided rank statistic: how many pairs across the split
    have the later round above the earlier one, less how many below (Mann-Whitney's U, centred). Splits
    leave ``STEP_SHORTEST`` rounds on either side."""
    n = ranks.shape[1]
    later = np.cumsum(ranks[:, ::-1], axis=1)[:, ::-1]  # [row, k]: the rank sum of rounds k..n-1
    ks = np.arange(STEP_SHORTEST, n - STEP_SHORTEST + 1)
    m = n - ks
    above = later[:, ks] - m * (m - 1) / 2  # pairs with the later round ranked higher
    return 2 * above - ks * m


@lru_cache(maxsize=64)
def _null(n: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``STEP_PERMUTATIONS`` random orders of ``n`` rounds (fixed seed): every split's statistic, and
    each order's least per-split chance (a split's chance: how often the orders reach its statistic)."""
    rng = np.random.default_rng(n)
    orders = rng.permuted(np.tile(np.arange(n), (STEP_PERMUTATIONS, 1)), axis=1)
    scores = _split_scores(orders)
    ranked = np.sort(scores, axis=0)
    reach = len(scores) - np.stack([np.searchsorted(ranked[:, k], scores[:, k], side="left")
                                    for k in range(scores.shape[1])], axis=1)
    return scores, ((1 + reach) / (len(scores) + 1)).min(axis=1)


def rising_reason(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> str:
    """Why the figure cannot be trusted because the candidate's cost kept rising or stepped up part way,
    or ""."""
    found = trend(candidate_ms, reference_ms)
    if not found.rising:
        return _step_reason(candidate_ms, reference_ms)
    third = max(1, found.rounds // 3)
    first, last = float(np.median(candidate_ms[:third])), float(np.median(candidate_ms[-third:]))
    return (f"the candidate's cost per call kept rising through the rounds ({first:.3f} ms a call in the first "
            f"{third} rounds, {last:.3f} ms in the last {third}; {found.rise:+.0%} against the reference's over "
            f"{found.rounds} rounds, Kendall tau {found.tau:.2f}): state that grows with every call has no steady "
            f"speed to report")


def _step_reason(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> str:
    found = step(candidate_ms, reference_ms)
    if not found.stepped:
        return ""
    n, at = len(candidate_ms), found.at
    before, after = float(np.median(candidate_ms[:at])), float(np.median(candidate_ms[at:]))
    return (f"the candidate's cost per call stepped up part way through the rounds ({before:.3f} ms a call in "
            f"rounds 1-{at}, {after:.3f} ms in rounds {at + 1}-{n}; {found.above_median:+.0%} against the "
            f"reference's over the median of all {n} rounds, chance without a change {found.chance:.4f}): a cost "
            f"that changes with use has no steady speed to report")
