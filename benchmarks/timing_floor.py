"""The monitor's timing floor and noise floor: what timing every call from outside the candidate's
process costs, next to the CPU variant's few-millisecond tasks.

- round trip: the monitor's clock around one call of a model that does almost nothing (a 1-element
  task), through the real protocol (verifier.monitor.peers.call, verifier.sandbox.serve) to a
  confined reference worker: one message each way on the CPU, three on a device (Prime untimed, Call
  timed, Collect timed apart);
- A/A: the reference against itself, two confined reference workers timed by the monitor exactly as
  the latency gate times candidate and reference (paired rounds, random order, fresh inputs per
  pair): the speedup's noise floor on the bundled level-1 tasks.

Run: .venv/bin/python -m benchmarks.timing_floor [--calls 500] [--rounds 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from contextlib import nullcontext

from benchmarks.verify_speed import CASES, bundled_task
from verifier.gates.latency import PairedTimes, summarise
from verifier.monitor.freeze import stopped
from verifier.monitor.peers import call
from verifier.monitor.reference import Reference
from verifier.monitor.sites import ReferenceSite
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena, align

TINY = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1.0


def get_inputs():
    return [torch.randn(1)]


def get_init_inputs():
    return []
'''


def _worker(source: str, seed: int, threads: int = 2) -> tuple[ReferenceSite, Reference, Arena]:
    site = ReferenceSite(threads, 6144)
    site.wait_ready(time.monotonic() + 300)
    reference = Reference(site.process, msg.RefStart(source, "float32", seed, seed + 1, 5, threads), time.monotonic() + 600)
    reference.wait_done(time.monotonic() + 600)
    size = align(reference.input_bytes()) + align(reference.output_bytes() * 2 + 4096)
    arena = Arena.create(size)
    reference.attach(arena)
    return site, reference, arena


def round_trip(calls: int) -> dict[str, float]:
    site, reference, arena = _worker(TINY, 1)
    try:
        out_start = align(reference.input_bytes())
        spec = reference.draw(0, True, time.monotonic() + 60)
        found = {}
        for staged in (False, True):
            ns = [call(site.process, arena, spec, out_start, time.monotonic() + 60, "the floor", staged).ns
                  for _ in range(calls)]
            found["staged (device)" if staged else "one message (cpu)"] = statistics.median(ns) / 1e3
        return found
    finally:
        site.close()
        arena.close()


def aa(name: str, rounds: int, calls_per_round: int, seed: int) -> dict:
    source = bundled_task(name).source
    (a_site, a, a_arena), (b_site, b, b_arena) = _worker(source, seed), _worker(source, seed)
    try:
        out_start = align(a.input_bytes())
        order = random.Random(seed)
        a_ms, b_ms = [], []
        seen = (a.draw(2, True, time.monotonic() + 60), a_arena.map[:out_start])  # as the last trial's

        def place(inputs: tuple[list, bytes], a_first: bool) -> list:  # as Peers.place: written by the monitor,
            for arena in ((b_arena, a_arena) if a_first else (a_arena, b_arena)):  # the side timed first last
                arena.map[:out_start] = inputs[1]
            return inputs[0]

        for r in range(rounds):
            first = order.random() < 0.5
            ra, rb = [], []
            for c in range(calls_per_round):
                fresh = (a.draw(3 + r * calls_per_round + c, True, time.monotonic() + 60), a_arena.map[:out_start])
                # as the latency gate pairs them (verifier.monitor.timing._pair): untimed on inputs both
                # sides ran before, then timed on the fresh ones
                for timed, inputs in ((False, seen), (True, fresh)):
                    spec = place(inputs, first)
                    for side in ((a, b) if first else (b, a)):
                        arena = a_arena if side is a else b_arena
                        other = b if side is a else a  # each timed with the other stopped, as the gate does
                        with stopped(other.process.pid()) if timed else nullcontext():
                            took = call(side.process, arena, spec, out_start, time.monotonic() + 60, "A/A").ns / 1e6
                        if timed:
                            (ra if side is a else rb).append(took)
                seen = fresh
            a_ms.append(statistics.median(ra))
            b_ms.append(statistics.median(rb))
        result = summarise(PairedTimes(tuple(a_ms), tuple(b_ms)), 4000, 10.0)
        return {"speedup": result.speedup, "ci_low": result.ci_low, "ci_high": result.ci_high, "ms": result.reference_ms}
    finally:
        for site in (a_site, b_site):
            site.close()
        a_arena.close()
        b_arena.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    floor = round_trip(args.calls)
    print("round-trip floor of one timed call (us, median of %d):" % args.calls,
          ", ".join(f"{k} {v:.1f}" for k, v in floor.items()))
    deviations = []
    print("A/A (reference vs itself, each in its own confined process, timed by the monitor): speedup [95% CI]")
    for name in CASES:
        runs = [aa(name, args.rounds, 3, rep) for rep in range(args.repeats)]
        cells = ", ".join(f"{r['speedup']:.3f} [{r['ci_low']:.3f}-{r['ci_high']:.3f}]" for r in runs)
        print(f"  {name:16s} ({runs[0]['ms']:.2f} ms): {cells}; floor/call {floor['one message (cpu)'] / 1e3 / runs[0]['ms']:.1%}")
        deviations += [max(r["ci_high"] - 1, 1 - r["ci_low"]) for r in runs]
    print(f"A/A noise floor (max CI deviation from 1): {max(deviations):.3f}; median {statistics.median(deviations):.3f}")


if __name__ == "__main__":
    main()
