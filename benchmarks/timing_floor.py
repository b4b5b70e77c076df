"""The monitor's timing floor and noise floor: what timing from outside the candidate's process costs,
and how far two identical processes' figures differ.

- fixed cost of a window: the monitor's clock around the Run of a window of a model that does almost
  nothing (a 1-element task), through the real protocol (verifier.monitor.peers.window,
  verifier.sandbox.serve) to a confined reference worker, for windows of 1 and of 64 calls: the first
  is the fixed cost (two pipe messages, a process woken), the difference over 63 calls what one more
  call of a Python ``forward`` costs. The latency gate measures the fixed cost again in every round
  (an empty window of the reference worker) and takes it off every window.
- A/A: the reference against itself, two confined reference workers timed by the monitor exactly as
  the latency gate times candidate and reference (verifier.monitor.timing.measure: calibration,
  windows of many calls, rounds in a seeded order, each side alone in its turn), on every level-1 task
  of the bundled cpu build: the speedup's noise floor. Target: median |1 - ratio| <= 3%, worst <= 6%.

- same pair (``--same-pair N``): where an A/A run is off, whose is it? N pairs of workers per task, each
  pair timed three times in a row: as drawn, again on fresh arenas (new pages for the inputs), and with
  the roles swapped (the other worker draws the inputs); a bias that stays through all three belongs to
  a process.

Run: .venv/bin/python -m benchmarks.timing_floor [--calls 200] [--tasks L1/001_relu,...] [--repeats 1]
     [--build runs/build-cpu] [--same-pair 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchmarks.known_good_speedups import _build_dir
from kernelbench_npu.spec import load_build
from verifier.gates.correctness import Tolerance
from verifier.gates.latency import PairedTimes, summarise
from verifier.monitor import timing
from verifier.monitor.freeze import hold, release
from verifier.monitor.peers import window
from verifier.monitor.reference import Reference
from verifier.monitor.rounds import Side
from verifier.monitor.sites import ReferenceSite
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena, align
from verifier.sandbox.inputs_plan import plan as trial_plan
from verifier.settings import VerifySettings

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


class Worker:
    """A confined reference worker with its arena, as the latency gate uses one."""

    def __init__(self, source: str, seed: int, threads: int = 2) -> None:
        self.site = ReferenceSite(threads, 6144)
        self.site.wait_ready(time.monotonic() + 300)
        self.reference = Reference(self.site.process, msg.RefStart(source, "float32", seed, seed + 1, 5, threads),
                                   time.monotonic() + 600)
        self.reference.wait_done(time.monotonic() + 600)
        self.arenas = [Arena.create(align(self.reference.input_bytes()) + align(self.reference.output_bytes() * 2 + 4096))]
        self.reference.attach(self.arenas[0])

    def side(self, name: str) -> Side:
        return Side(name, self.site.process, self.reference.arena, True, 480.0, self.reference.attach)

    def close(self) -> None:
        self.site.close()
        for arena in self.arenas:
            arena.close()


def fixed_cost(calls: int) -> dict[str, float]:
    worker = Worker(TINY, 1)
    try:
        stride = align(worker.reference.input_bytes())
        found = {}
        for per_window in (1, 64):
            arena = Arena.create(per_window * (stride + align(worker.reference.output_bytes() * 2 + 4096)))
            worker.arenas.append(arena)
            worker.reference.attach(arena)
            specs = worker.reference.draw([(k, True, k * stride) for k in range(per_window)], time.monotonic() + 60)
            ns = [window(worker.site.process, arena, specs, per_window * stride, time.monotonic() + 60, "the floor").ns
                  for _ in range(calls)]
            found[per_window] = statistics.median(ns) / 1e3
        return {"window of 1 call (us)": found[1], "each further call (us)": (found[64] - found[1]) / 63}
    finally:
        worker.close()


@contextmanager
def _pair(source: str, seed: int, threads: int) -> Iterator[tuple[Worker, Worker]]:
    """Two confined reference workers of one task, both closed (and continued) after."""
    a, b = Worker(source, seed, threads), Worker(source, seed, threads)
    try:
        yield a, b
    finally:
        for worker in (a, b):
            release(worker.site.process.pid())
            worker.close()


def _measure(first: Worker, second: Worker, seed: int, settings: VerifySettings) -> timing.Measurement:
    """``second`` timed against ``first`` as the latency gate times a candidate (``first`` draws)."""
    return timing.measure([first.side("A"), second.side("B")], first.reference, trial_plan(5),
                          timing.plan_of(settings), Tolerance(1e-5, 1e-5, 0.01), seed, False, 480.0, first.arenas)


def aa(source: str, seed: int, settings: VerifySettings) -> dict:
    with _pair(source, seed, settings.threads) as (a, b):
        measured = _measure(a, b, seed, settings)
    plan = timing.plan_of(settings)
    result = summarise(PairedTimes(measured.times[1], measured.times[0]), plan.resamples, plan.bound,
                       facts=measured.facts())
    return {"ratio": result.speedup, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "ms": result.reference_ms, "calls": result.calls_per_window, "retimed": result.rounds_retimed,
            "trusted": result.trusted}


def same_pair(source: str, seed: int, settings: VerifySettings) -> list[float]:
    """One pair of workers timed three times: A's time over B's (median over rounds of the per-round
    ratio) as drawn by A, again on fresh arenas (measure makes new ones), then drawn by B."""
    out = []
    with _pair(source, seed, settings.threads) as (a, b):
        for first, second in ((a, b), (a, b), (b, a)):
            measured = _measure(first, second, seed, settings)
            mine, theirs = measured.times if first is a else measured.times[::-1]
            out.append(statistics.median(x / y for x, y in zip(mine, theirs)))
    return out


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="windows timed for the fixed cost")
    parser.add_argument("--tasks", default="", help="level-1 task ids of the build (default: all of them)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--build", default=None, help="an existing cpu build of the bundled problems")
    parser.add_argument("--same-pair", type=int, default=0, help="pairs per task timed three times each (only this)")
    args = parser.parse_args()
    settings = VerifySettings()
    with tempfile.TemporaryDirectory(prefix="timing-floor-") as tmp:
        build = load_build(_build_dir(args.build, Path(tmp)))
        wanted = [t for t in args.tasks.split(",") if t]
        level1 = [t for t in build.runnable() if t.level == 1]
        tasks = [t for t in level1 if not wanted or t.task_id in wanted]
        unknown = sorted(set(wanted) - {t.task_id for t in tasks})
        if unknown:
            sys.exit(f"timing_floor: --tasks: not a runnable level-1 task of the build: {', '.join(unknown)} "
                     f"(they are named like {level1[0].task_id if level1 else 'L1/001_relu'})")
        print(f"start: {_load()}")
        floor = fixed_cost(args.calls)
        print("fixed cost, median of %d windows: " % args.calls + ", ".join(f"{k} {v:.1f}" for k, v in floor.items()))
        if args.same_pair:
            print("same pair: A's time / B's, as drawn by A, on fresh arenas, drawn by B")
            for task in tasks:
                for pair in range(args.same_pair):
                    row = same_pair(task.source, 100 + pair, settings)
                    print(f"  {task.task_id:30s} pair {pair}: " + " ".join(f"{r:.3f}" for r in row), flush=True)
            print(f"end: {_load()}")
            return
        deviations = _aa_table(tasks, settings, args.repeats)
    print(f"A/A |1 - ratio|: median {statistics.median(deviations):.3f}, worst {max(deviations):.3f} "
          f"over {len(deviations)} runs; end: {_load()}")


def _aa_table(tasks: list, settings: VerifySettings, repeats: int) -> list[float]:
    print(f"A/A (the reference against itself, each in its own confined process, timed as the latency gate times; "
          f"windows of {settings.window_ms:g} ms, or down to {settings.min_window_ms:g} ms where drawing the inputs "
          f"would take over {settings.draw_ms_per_round:g} ms a round; {settings.latency_rounds} rounds): ratio [95% CI]")
    deviations = []
    for task in tasks:
        runs = [aa(task.source, rep + 1, settings) for rep in range(repeats)]
        cells = ", ".join(f"{r['ratio']:.3f} [{r['ci_low']:.3f}-{r['ci_high']:.3f}] x{r['calls']}"
                          + ("" if r["trusted"] else " (not trusted)") for r in runs)
        print(f"  {task.task_id:30s} ({runs[0]['ms']:.3f} ms/call): {cells}", flush=True)
        deviations += [abs(1 - r["ratio"]) for r in runs]
    return deviations


if __name__ == "__main__":
    main()
