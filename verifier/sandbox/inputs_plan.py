"""The trial plan of one verification (torch-free: the monitor reads it, the reference worker draws it).

``correctness_trials`` trials cycling through the input distributions, one in-place perturbation
probe of trial 0 (same storage, new values: a replayed output fails), POST_TIMING_TRIALS trials run
only after timing (outputs re-checked after the timed loop), and two audit trials the monitor plants
at secret positions among the timed calls: fresh inputs drawn as the timed calls' are (the task's own
``get_inputs()`` under a fresh seed: nothing tells an audited call from a timed one), then a
near-duplicate of them (a few elements changed, so a cache keyed on sampled values returns a stale
output).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelbench_npu.distributions import DISTRIBUTIONS

POST_TIMING_TRIALS = 2
TIMED = "task"  # the timed calls' inputs: the task's own get_inputs() (as a user times the kernel), fresh per call


@dataclass(frozen=True)
class Trial:
    index: int
    kind: str  # "check" | "perturb" | "post" | "audit"
    distribution: str


def plan(correctness_trials: int) -> list[Trial]:
    trials = [Trial(i, "check", DISTRIBUTIONS[i % len(DISTRIBUTIONS)]) for i in range(correctness_trials)]
    trials.append(Trial(len(trials), "perturb", DISTRIBUTIONS[0]))
    for _ in range(POST_TIMING_TRIALS):
        trials.append(Trial(len(trials), "post", "normal"))
    trials.append(Trial(len(trials), "audit", TIMED))
    trials.append(Trial(len(trials), "audit", "near-duplicate"))  # of the audit trial before it
    return trials
