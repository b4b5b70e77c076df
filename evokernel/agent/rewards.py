"""Stage rewards (paper Eq. 5 and 6) and the online normaliser of refining rewards.

Drafting: r1 = +1 if the kernel is feasible (hack, compile and correctness gates pass), else -1.
Refining: r2 = tanh(log s - log b) for a feasible kernel whose speedup over the reference is s
against the incumbent's b, else -1; then normalised online by scale only,
r_hat = r2 / max(rms, 1 / MAX_AMPLIFICATION) over the campaign's raw refining rewards so far (this one
included), so Q2 sees rewards on a stable scale (PopArt's purpose) while every reward keeps its sign
and, among the rewards applied at one time, its order and its ratio to every other; since |r2| <= 1,
|r_hat| <= MAX_AMPLIFICATION. The former z-score, (r2 - mean) / max(std, 0.05) clipped to [-3, 3],
turned a -0.25 regression into -2.27 beside gains of about +1.4 (issue 35) and made a slower kernel
positive whenever most refinements had failed.

Both speedups are *paired*: each kernel is timed against the reference in the same verification,
interleaved (verifier.gates.latency), so machine load that slows both sides cancels. Raw latencies
from two verifications do not: on a shared 2-core machine the reference alone moved 0.12 -> 0.24 ms
within a minute, and an identical kernel resubmitted earned |r| up to 0.999. What load leaves in
the paired speedup is measured too (each verdict's 95% bootstrap interval), and a change inside
that noise earns ~0: the gain is scaled by :func:`significance`, 0 while |gain| is within the
combined interval, 1 beyond twice it (benchmarks/reward_noise.py measures both targets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DRAFT_SUCCESS, FAILURE = 1.0, -1.0
# The most a reward is scaled up: the scale's floor is 1 / this, so |r_hat| <= this (|r2| <= 1). A
# campaign whose refinements all move speed by a few percent still has its rewards applied at
# up to 3x their raw size, not blown up to the size of a failure.
MAX_AMPLIFICATION = 3.0
# Smallest noise assumed in a log speedup: two verifications of one kernel on a quiet machine still
# differ by about this much (turbo and cache state between runs, which no in-run interval sees).
NOISE_FLOOR = 0.03
_Z95 = 1.96


def draft_reward(feasible: bool) -> float:
    return DRAFT_SUCCESS if feasible else FAILURE


@dataclass(frozen=True)
class PairedSpeedup:
    """A kernel's speedup over the reference measured in one verification, with its 95% interval."""

    speedup: float
    ci_low: float
    ci_high: float

    @classmethod
    def of(cls, speedup: float | None, ci_low: float | None, ci_high: float | None) -> "PairedSpeedup | None":
        """None unless a positive speedup was measured (a missing interval counts as zero width)."""
        if speedup is None or not speedup > 0 or not math.isfinite(speedup):
            return None
        low = ci_low if ci_low is not None and 0 < ci_low <= speedup else speedup
        high = ci_high if ci_high is not None and ci_high >= speedup and math.isfinite(ci_high) else speedup
        return cls(speedup, low, high)

    @property
    def log_sigma(self) -> float:
        """Standard error of log(speedup), from the 95% interval's width."""
        return (math.log(self.ci_high) - math.log(self.ci_low)) / (2 * _Z95)


def significance(gain: float, noise: float) -> float:
    """0 while |gain| <= noise, rising linearly to 1 at twice the noise (continuous, no cliff)."""
    if noise <= 0:
        return 1.0
    return min(1.0, max(0.0, abs(gain) / noise - 1.0))


@dataclass(frozen=True)
class RefineTerms:
    """The refining reward and the numbers it came from (what ``attempts.reward_rule`` spells out)."""

    reward: float
    gain: float | None = None  # log s_new - log s_incumbent
    noise: float | None = None  # the 95% noise of that difference
    weight: float | None = None  # significance(gain, noise)

    def rule(self, feasible: bool, incumbent: PairedSpeedup | None, new: PairedSpeedup | None) -> str:
        if not feasible:
            return "refine: infeasible -> -1"
        if incumbent is None or new is None:
            return "refine: feasible, no paired speedup to compare -> 0"
        return (f"refine: tanh(ln({new.speedup:.4g}/{incumbent.speedup:.4g}) = {self.gain:+.4f}) = "
                f"{math.tanh(self.gain):+.4f} x significance {self.weight:.2f} (noise {self.noise:.4f}) "
                f"= {self.reward:+.4f}")


def refine_terms(feasible: bool, incumbent: PairedSpeedup | None, new: PairedSpeedup | None) -> RefineTerms:
    """tanh(log s_new - log s_incumbent) scaled by its significance; -1 if infeasible.

    The noise is the 95% interval of the difference, sqrt(se_new^2 + se_inc^2 + floor^2) * 1.96 on
    the log scale. A feasible kernel without a speedup (latency gate failed) earns 0: it is correct
    but says nothing about speed. With no incumbent yet a feasible kernel earns 0 too.
    """
    if not feasible:
        return RefineTerms(FAILURE)
    if incumbent is None or new is None:
        return RefineTerms(0.0)
    gain = math.log(new.speedup) - math.log(incumbent.speedup)
    noise = _Z95 * math.sqrt(new.log_sigma ** 2 + incumbent.log_sigma ** 2 + NOISE_FLOOR ** 2)
    weight = significance(gain, noise)
    return RefineTerms(math.tanh(gain) * weight, gain, noise, weight)


def refine_reward(feasible: bool, incumbent: PairedSpeedup | None, new: PairedSpeedup | None) -> float:
    """The refining reward (see :func:`refine_terms`)."""
    return refine_terms(feasible, incumbent, new).reward


@dataclass(frozen=True)
class RunningStats:
    """Welford running mean and variance, and the root mean square (the normaliser's scale); immutable,
    so a replay from the lake gives the same state."""

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

    @property
    def rms(self) -> float:
        """sqrt(mean of squares) = sqrt((m2 + count mean^2) / count)."""
        return math.sqrt(max(self.m2 + self.count * self.mean ** 2, 0.0) / self.count) if self.count else 0.0

    @property
    def scale(self) -> float:
        """What a reward is divided by: the rms, floored at 1 / MAX_AMPLIFICATION."""
        return max(self.rms, 1.0 / MAX_AMPLIFICATION)

    def normalise(self, value: float) -> float:
        """value / scale: the sign and the order of rewards kept; the raw value until two samples exist."""
        if self.count < 2:
            return value
        return value / self.scale

    def rule(self, value: float) -> str:
        """How :meth:`normalise` maps ``value``, in numbers (for ``attempts.reward_rule``)."""
        if self.count < 2:
            return f"normaliser has {self.count} reward(s): applied as is"
        return (f"normalised: {value:+.4f} / max(rms {self.rms:.4f} over {self.count} rewards, "
                f"1/{MAX_AMPLIFICATION:g}) = {self.normalise(value):+.4f}")


def normalise_refine_reward(stats: RunningStats, reward: float) -> tuple[float, RunningStats]:
    """Add the reward to the running statistics, then normalise it (returns r_hat, new stats)."""
    updated = stats.add(reward)
    return updated.normalise(reward), updated
