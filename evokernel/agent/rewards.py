"""Stage rewards (paper Eq. 5 and 6) and the online normaliser of refining rewards.

Drafting: r1 = +1 if the kernel is feasible (hack, compile and correctness gates pass), else -1.
Refining: r2 = tanh(log b - log l) for a feasible kernel with latency l against the best-so-far b,
else -1; then normalised online, r_hat = (r2 - mean) / std over the running statistics (Welford),
PopArt-style, so Q2 sees rewards on a stable scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DRAFT_SUCCESS, FAILURE = 1.0, -1.0
_MIN_STD = 0.05  # floor: with near-identical rewards the z-score would explode
_CLIP = 3.0  # normalised rewards are clipped to [-3, 3] so one outlier cannot swamp Q


def draft_reward(feasible: bool) -> float:
    return DRAFT_SUCCESS if feasible else FAILURE


def refine_reward(feasible: bool, best_ms: float | None, new_ms: float | None) -> float:
    """tanh(log best - log new): > 0 when faster than the incumbent, bounded by 1; -1 if infeasible.

    A feasible kernel without a latency measurement (latency gate failed) earns 0: it is correct but
    says nothing about speed. With no incumbent yet (best_ms None) a feasible kernel earns 0 too.
    """
    if not feasible:
        return FAILURE
    if best_ms is None or new_ms is None or best_ms <= 0 or new_ms <= 0:
        return 0.0
    return math.tanh(math.log(best_ms) - math.log(new_ms))


@dataclass(frozen=True)
class RunningStats:
    """Welford running mean and variance; immutable, so a replay from the lake gives the same state."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, value: float) -> "RunningStats":
        count = self.count + 1
        delta = value - self.mean
        mean = self.mean + delta / count
        return RunningStats(count=count, mean=mean, m2=self.m2 + delta * (value - mean))

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0

    def normalise(self, value: float) -> float:
        """z-score of value under the current statistics; the raw value until two samples exist."""
        if self.count < 2:
            return value
        z = (value - self.mean) / max(self.std, _MIN_STD)
        return max(-_CLIP, min(_CLIP, z))


def normalise_refine_reward(stats: RunningStats, reward: float) -> tuple[float, RunningStats]:
    """Add the reward to the running statistics, then normalise it (returns r_hat, new stats)."""
    updated = stats.add(reward)
    return updated.normalise(reward), updated
