"""Child side of the latency gate: candidate and reference timed interleaved in the same process.

Same thread budget for both, fresh inputs every call (made and placed on the device before the
timer starts, by ``fresh_inputs``), warm-up first, and a random order of the two sides within each
round drawn from the verification's secret seed, so drift in machine load hits both sides alike.
The parent summarises the rounds (verifier.gates.latency).

Audit (verifier.sandbox.audit): at the timed candidate calls named in ``Audit.planted`` the fresh
inputs are made as for any call, then overwritten in place with the planted values (before the
timer starts), so an audited call's inputs live where any call's would (a cache keyed on
``data_ptr()`` cannot tell them apart); its output is kept in ``Audit.kept`` for the untimed check
afterwards. Every call of both sides runs the same timed closure (it hands its result to a list),
so an audited call is timed exactly like the others and nothing is copied while timed.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class PairedTimes:
    candidate_ms: tuple[float, ...]  # per round: median of calls_per_round calls
    reference_ms: tuple[float, ...]


@dataclass
class Audit:
    """The audited timed candidate calls (0-based, warm-up excluded): their planted inputs, how to
    write them into a call's fresh inputs, and (filled while timing) their outputs."""

    planted: dict[int, list]
    overwrite: Callable[[list, list], list]  # (fresh inputs, planted inputs) -> the call's inputs
    kept: dict[int, object] = field(default_factory=dict)


def time_interleaved(run_candidate: Callable[[list], object], run_reference: Callable[[list], object],
                     fresh_inputs: Callable[[int], list], timer: Callable[[Callable[[], object]], float],
                     rounds: int, calls_per_round: int, warmup_calls: int, order_seed: int,
                     audit: Audit | None = None) -> PairedTimes:
    """Child side. Each call gets inputs never seen before; the order within a round is random."""
    audit = audit or Audit({}, lambda fresh, _planted: fresh)
    counter = iter(range(1 << 62))
    candidate_calls = iter(range(1 << 62))
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
                call = next(candidate_calls) if run is run_candidate else -1
                inputs = fresh_inputs(next(counter))
                if call in audit.planted:
                    inputs = audit.overwrite(inputs, audit.planted[call])
                result: list = []
                samples.append(timer(lambda: result.append(run(inputs))))
                if call in audit.planted:
                    audit.kept[call] = result[0]
                del result
            sink.append(statistics.median(samples))
    return PairedTimes(tuple(cand), tuple(ref))
