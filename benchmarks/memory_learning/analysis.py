"""What the learning benchmark measures, over independent seeds (one seed = one world and one run):

- curves: the mean Q1 of useful, neutral and harmful items (those whose Q1 has moved) every
  ``record_every`` steps, with bootstrap CIs over seeds, and the *separation step*: the first
  checkpoint from which on the useful-minus-neutral gap's 95% CI stays above 0;
- outcomes per strategy at equal budget: feasible drafts / judged drafts, tasks solved, attempts to
  the first feasible kernel, log speedup of the best kernel over the first feasible one (over all
  tasks, and over level-2 tasks where the world has levels), the share of refining steps whose
  context held at least one item and the share of refining items from another category;
- margins: value-driven minus heuristic and minus random, paired by seed, with bootstrap CIs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from benchmarks.memory_learning.sim import RunResult, SimConfig, run
from benchmarks.memory_learning.world import World, WorldParams
from reports.bootstrap import Interval, mean_ci, paired_diff_ci

OUTCOMES = ("draft_rate", "solved", "first_feasible", "gain")
REFINE_OUTCOMES = ("gain", "gain_l2", "refine_with_items", "refine_other")
LABELS = {"draft_rate": "feasible drafts / drafts", "solved": "tasks solved", "first_feasible":
          "attempts to first feasible", "gain": "log speedup best / first feasible",
          "gain_l2": "log speedup best / first feasible, level-2 tasks",
          "refine_with_items": "refining steps with >= 1 item", "refine_other": "refining items of another category"}


def outcome(result: RunResult, name: str) -> float | None:
    if name == "draft_rate":
        return result.draft_rate
    if name == "solved":
        return sum(result.solved) / len(result.solved)
    if name == "refine_with_items":
        return result.refines_with_items / result.refines if result.refines else None
    if name == "refine_other":
        return result.refine_items_other / result.refine_items if result.refine_items else None
    if name == "gain_l2":
        values = [g for g, level in zip(result.gain, result.levels) if level == 2 and g is not None]
        return statistics.fmean(values) if values else None
    values = [v + 1 if name == "first_feasible" else v
              for v in (result.first_feasible if name == "first_feasible" else result.gain) if v is not None]
    return statistics.fmean(values) if values else None


@dataclass(frozen=True)
class Runs:
    config: SimConfig
    results: tuple[RunResult, ...]

    def values(self, name: str) -> list[float | None]:
        return [outcome(r, name) for r in self.results]

    def interval(self, name: str) -> Interval:
        return mean_ci(self.values(name))


def run_seeds(params: WorldParams, config: SimConfig, seeds: range) -> Runs:
    return Runs(config, tuple(run(World(params, seed), config, seed) for seed in seeds))


def margins(value: Runs, other: Runs, names: tuple[str, ...] = OUTCOMES) -> dict[str, Interval]:
    """value minus other per outcome, paired by seed (attempts to first feasible: lower is better)."""
    return {name: paired_diff_ci(value.values(name), other.values(name)) for name in names}


def curves(runs: Runs, stage: int = 1) -> list[tuple[int, dict[str, Interval]]]:
    """Per checkpoint: the mean Q of each hidden class over seeds, and the useful - neutral gap."""
    points = []
    for k, (step, *_) in enumerate(runs.results[0].curve):
        by_class = {cls: mean_ci([r.curve[k][stage][cls] for r in runs.results if not math.isnan(r.curve[k][stage][cls])])
                    for cls in ("useful", "neutral", "harmful")}
        gaps = [r.curve[k][stage]["useful"] - r.curve[k][stage]["neutral"] for r in runs.results]
        by_class["gap"] = mean_ci([g for g in gaps if not math.isnan(g)])
        points.append((step, by_class))
    return points


def separation_step(points: list[tuple[int, dict[str, Interval]]]) -> int | None:
    """The first checkpoint from which the gap's CI lower bound stays above 0 to the end."""
    found = None
    for step, by_class in points:
        gap = by_class["gap"]
        if gap.low is not None and gap.low > 0:
            found = step if found is None else found
        else:
            found = None
    return found


def sweep(params: WorldParams, base: SimConfig, seeds: range,
          **axes: tuple) -> list[tuple[SimConfig, Interval, Interval]]:
    """One axis at a time around ``base``: the feasible-draft rate and the refining gain of each
    setting, with their CIs (the base itself once)."""
    rows, seen = [], set()
    for field_name, values in axes.items():
        for value in values:
            config = replace(base, **{field_name: value})
            if config in seen:
                continue
            seen.add(config)
            runs = run_seeds(params, config, seeds)
            rows.append((config, runs.interval("draft_rate"), runs.interval("gain")))
    return rows
