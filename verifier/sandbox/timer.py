"""Child side of the latency gate: candidate and reference timed interleaved in the same process.

Same thread budget for both, fresh inputs every call (made and placed on the device before the
timer starts, by ``fresh_inputs``), warm-up first, and a random order of the two sides within each
round drawn from the verification's secret seed, so drift in machine load hits both sides alike.
The parent summarises the rounds (verifier.gates.latency).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PairedTimes:
    candidate_ms: tuple[float, ...]  # per round: median of calls_per_round calls
    reference_ms: tuple[float, ...]


def time_interleaved(run_candidate: Callable[[list], object], run_reference: Callable[[list], object],
                     fresh_inputs: Callable[[int], list], timer: Callable[[Callable[[], object]], float],
                     rounds: int, calls_per_round: int, warmup_calls: int, order_seed: int) -> PairedTimes:
    """Child side. Each call gets inputs never seen before; the order within a round is random."""
    counter = iter(range(1 << 62))
    for _ in range(warmup_calls):
        for run in (run_candidate, run_reference):
            inputs = fresh_inputs(next(counter))
            timer(lambda: run(inputs))
    rng = random.Random(order_seed)
    cand, ref = [], []
    for _ in range(rounds):
        sides = [(run_candidate, cand), (run_reference, ref)]
        rng.shuffle(sides)
        for run, sink in sides:
            samples = []
            for _ in range(calls_per_round):
                inputs = fresh_inputs(next(counter))
                samples.append(timer(lambda: run(inputs)))
            sink.append(statistics.median(samples))
    return PairedTimes(tuple(cand), tuple(ref))
