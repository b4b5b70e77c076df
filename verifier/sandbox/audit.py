"""The random-iteration audit of the latency gate (child side): which timed calls are audited.

The plan's two audit trials (verifier.sandbox.inputs: fresh normal inputs, then a near-duplicate of
them) are planted at two timed candidate calls drawn from the verification's secret seed, base
first; their outputs are kept (not copied while timing) and sent with the timing report, and the
parent checks them against the reference worker's outputs for the same trials, which it computed
from the same seed without ever importing candidate code. A kernel that works only for the first
calls, only while its outputs are being checked, or that answers a near-duplicate input from a
cache keyed on sampled values, returns a wrong output at an audited call.

The candidate cannot tell an audited call from any other: the inputs are made before the timer
starts like every fresh input, and the timed closure is the same for every call.
Torch-free (the parent reads :func:`expected_audits`).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from verifier.seeds import derive_seed

if TYPE_CHECKING:  # torch-free at run time: the parent imports expected_audits
    from verifier.sandbox.inputs import Trial


def audit_trials(plan: list[Trial]) -> list[Trial]:
    return [t for t in plan if t.kind == "audit"]


def audited_calls(trials: list[Trial], timed_calls: int, seed: int) -> dict[int, Trial]:
    """Timed candidate call index -> audit trial, in plan order (as many as there are calls)."""
    count = min(len(trials), timed_calls)
    calls = sorted(random.Random(derive_seed(seed, "audit")).sample(range(timed_calls), count))
    return dict(zip(calls, trials[:count]))


def expected_audits(timed_calls: int) -> int:
    """How many audited outputs the parent must receive (the plan has two audit trials)."""
    return min(2, timed_calls)
