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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEAST_ROUNDS = 10
TAU = 0.6  # Kendall's tau of the relative cost against the round index
RISE = 0.25  # the relative cost's rise from the first round to the last, on the Theil-Sen line


@dataclass(frozen=True)
class Trend:
    """The relative cost's trend across the rounds."""

    rounds: int
    tau: float  # Kendall's tau (tau-a) of log(candidate / reference) against the round index
    rise: float  # exp(Theil-Sen slope x (rounds - 1)) - 1: the rise from the first round to the last

    @property
    def rising(self) -> bool:
        return self.rounds >= LEAST_ROUNDS and self.tau >= TAU and self.rise >= RISE


def trend(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> Trend:
    """The trend of the candidate's cost relative to the reference's, rounds in the order played."""
    cost = np.log(np.maximum(candidate_ms, 1e-9) / np.maximum(reference_ms, 1e-9))
    n = len(cost)
    if n < 2:
        return Trend(n, 0.0, 0.0)
    i, j = np.triu_indices(n, k=1)
    steps = cost[j] - cost[i]
    tau = float(np.sign(steps).sum() / len(steps))
    slope = float(np.median(steps / (j - i)))
    return Trend(n, tau, float(np.expm1(slope * (n - 1))))


def rising_reason(candidate_ms: np.ndarray, reference_ms: np.ndarray) -> str:
    """Why the figure cannot be trusted because the candidate's cost kept rising, or ""."""
    found = trend(candidate_ms, reference_ms)
    if not found.rising:
        return ""
    third = max(1, found.rounds // 3)
    first, last = float(np.median(candidate_ms[:third])), float(np.median(candidate_ms[-third:]))
    return (f"the candidate's cost per call kept rising through the rounds ({first:.3f} ms a call in the first "
            f"{third} rounds, {last:.3f} ms in the last {third}; {found.rise:+.0%} against the reference's over "
            f"{found.rounds} rounds, Kendall tau {found.tau:.2f}): state that grows with every call has no steady "
            f"speed to report")
