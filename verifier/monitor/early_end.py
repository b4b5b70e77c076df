"""When a latency phase's rounds end before the last one (verifier.monitor.timing plays them): once the
speedup a user reads is known to the plan's precision, and only while nothing was seen that needs every
round. A steady kernel on a quiet machine stops after ``settle_rounds`` rounds; a noisy one, or one whose
process used CPU while it was stopped, plays every round and retime."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from verifier.gates.latency import median_ci
from verifier.monitor import window_size
from verifier.monitor.rounds import Side, Turn

if TYPE_CHECKING:
    from verifier.monitor.timing import TimingPlan

SETTLE_RESAMPLES = 1000  # bootstrap resamples of the early-stop check (the verdict's own CI uses the settings')


def ends_early(counted: list[list[Turn]], steals: int, sides: list[Side], timing: "TimingPlan",
               rng: np.random.Generator, least: int) -> bool:
    """Whether the phase stops now: ``least`` rounds counted (the rounds certain to play, and the trusted
    minimum), the figure known to the plan's precision (:func:`settled`), and no round yet in which the
    candidate's process used CPU while stopped. A process seen stealing meets every round and retime, as
    without the early end: the refusal needs two such rounds (verifier.monitor.timing.STEAL_LIMIT), and
    one that steals now and then would otherwise be timed over too few rounds to show the second."""
    if steals or len(counted) < least:
        return False
    return settled(counted, sides, timing, rng)


def settled(counted: list[list[Turn]], sides: list[Side], timing: "TimingPlan", rng: np.random.Generator) -> bool:
    """Whether every side's speedup over ``sides[0]`` is already known to within ``timing.settle_ci``: half
    the log width of its 95% bootstrap CI (the median of the rounds' ratios, as the gate summarises it),
    so that more rounds would not change the figure a user reads (a quiet machine, a steady kernel)."""
    if timing.settle_rounds <= 0 or timing.settle_ci <= 0:
        return False
    turns_so_far = [t for turns in counted for t in turns]
    fixed = window_size.fixed_cost(turns_so_far) + window_size.cold_cost(turns_so_far)
    per_side = [[next(t for t in turns if t.side == i).ms_per_call_less(fixed) for turns in counted]
                for i in range(len(sides))]
    record = np.asarray(per_side[0])
    for other in per_side[1:]:
        low, high = median_ci(np.log(np.maximum(record, 1e-9) / np.maximum(np.asarray(other), 1e-9)),
                              SETTLE_RESAMPLES, rng)
        if (high - low) / 2 > timing.settle_ci:
            return False
    return True
