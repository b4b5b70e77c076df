"""The learning benchmark: does value-driven retrieval learn, and does it beat similarity-only
(heuristic) and random retrieval at equal budget? Prints Markdown and writes it, with the numbers
as JSON, to ``--out``.

Run: .venv/bin/python -m benchmarks.memory_learning [--seeds 20] [--sweep-seeds 10] [--quick]

Worlds: "reference" (WorldParams defaults), "hard" (half the item effect, twice the reward noise,
three times the machine failures on ordinary tasks) and "transfer" (KernelBench's L1 -> L2: lessons
distilled after every task, the second half of the tasks level-2 fusions of 30 categories of their own,
each helped by lessons of two level-1 categories). Strategies share one budget: the same tasks,
``budget`` iterations each, n items per prompt, from the same pool of lambda * n. "value, gated" is
the value-driven method with refining's rules before issue 35 (the task's category first, another
category's item only with Q2 > 0). The sweep moves one setting at a time around the product's defaults
(the blend weight and the priors included) and reports the feasible-draft rate and the refining gain.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

from benchmarks.memory_learning.analysis import (LABELS, OUTCOMES, REFINE_OUTCOMES, Runs, curves, margins,
                                                 run_seeds, separation_step, sweep)
from benchmarks.memory_learning.sim import SimConfig
from benchmarks.memory_learning.world import WorldParams
from evokernel.config import Settings

WORLDS = {"reference": WorldParams(), "hard": WorldParams(effect=0.6, flip=0.2, machine=0.15),
          "transfer": WorldParams(levels=2, lessons_per_task=2, level2_categories=30)}


def product_config() -> SimConfig:
    """The simulation run with the product's defaults (evokernel.config.Settings)."""
    s = Settings()
    return SimConfig(alpha=s.alpha, epsilon=s.epsilon, n=s.retrieval_n, lam=s.retrieval_lambda, q_init=s.q_init,
                     q1_init=s.q1_init, q1_init_related=s.q1_init_related, q_weight=s.retrieval_q_weight,
                     min_relevance=s.refine_min_relevance)


def outcomes_table(runs: dict[str, Runs], names: tuple[str, ...] = OUTCOMES) -> list[str]:
    lines = ["| strategy | " + " | ".join(LABELS[o] for o in names) + " |", "|---" * (len(names) + 1) + "|"]
    for name, r in runs.items():
        lines.append(f"| {name} | " + " | ".join(r.interval(o).text("{:.3f}") for o in names) + " |")
    return lines


def margins_table(runs: dict[str, Runs], names: tuple[str, ...] = OUTCOMES) -> tuple[list[str], dict]:
    lines = ["| value-driven minus | " + " | ".join(LABELS[o] for o in names) + " |", "|---" * (len(names) + 1) + "|"]
    numbers = {}
    for other in (k for k in runs if k != "value"):
        m = margins(runs["value"], runs[other], names)
        numbers[other] = {o: asdict(i) for o, i in m.items()}
        lines.append(f"| {other} | " + " | ".join(m[o].text("{:+.3f}") for o in names) + " |")
    return lines, numbers


def world_runs(params: WorldParams, base: SimConfig, seeds: range) -> dict[str, Runs]:
    """The strategies at equal budget in one world."""
    return {"value": run_seeds(params, base, seeds),
            "value, gated": run_seeds(params, replace(base, gated=True), seeds),
            "heuristic": run_seeds(params, replace(base, strategy="heuristic"), seeds),
            "random": run_seeds(params, replace(base, strategy="random"), seeds)}


def curve_table(runs: Runs, every: int) -> tuple[list[str], int | None, list]:
    points = curves(runs)
    lines = ["| step | Q1 useful | Q1 neutral | Q1 harmful | useful - neutral |", "|---|---|---|---|---|"]
    for step, c in points[every - 1::every]:
        lines.append(f"| {step} | " + " | ".join(c[k].text("{:+.2f}") for k in ("useful", "neutral", "harmful", "gap")) + " |")
    return lines, separation_step(points), [(s, {k: asdict(v) for k, v in c.items()}) for s, c in points]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--sweep-seeds", type=int, default=10, help="0: no sweep")
    parser.add_argument("--quick", action="store_true", help="6 seeds, no sweep")
    parser.add_argument("--out", type=Path, default=Path("runs/bench/memory_learning"))
    args = parser.parse_args()
    seeds = range(6 if args.quick else args.seeds)
    base, started, md, data = product_config(), time.perf_counter(), [], {"defaults": asdict(product_config())}
    md += ["# Learning validation of the value-driven memory", "",
           "Simulated model and verifier (benchmarks/memory_learning); the product's retrieval, scoring, "
           "attribution and update code. This validates the learning machinery, not model quality.", "",
           f"Defaults under test: {asdict(base)}; {len(seeds)} seeds per cell; 95% bootstrap CIs over seeds.", ""]
    for world_name, params in WORLDS.items():
        runs = world_runs(params, base, seeds)
        table, numbers = margins_table(runs)
        refine_table, refine_numbers = margins_table(runs, REFINE_OUTCOMES)
        curve, separated, points = curve_table(runs["value"], 6 if params.tasks * base.budget > 600 else 2)
        md += [f"## World: {world_name}", "", f"`{asdict(params)}`", "", "### Outcomes at equal budget", "",
               *outcomes_table(runs), "", "### Margins (paired by seed)", "", *table, "",
               "### Refining (what reaches refining prompts, and the gain)", "",
               *outcomes_table(runs, REFINE_OUTCOMES), "", *refine_table, "",
               "### Learning curve (Q1 by hidden usefulness, items whose Q1 moved)", "", *curve, "",
               f"Separation: the useful-minus-neutral Q1 gap's CI stays above 0 from step {separated} on "
               f"(steps are iterations of the campaign, all tasks together).", ""]
        data[world_name] = {"params": asdict(params), "margins": numbers, "refine_margins": refine_numbers,
                            "separation_step": separated,
                            "curve": points, "outcomes": {k: {o: asdict(r.interval(o)) for o in OUTCOMES + REFINE_OUTCOMES}
                                                          for k, r in runs.items()}}
    ablations = {"defaults": base, "q1_init 0 (optimistic prior)": replace(base, q1_init=0.0),
                 "q1_init_related -1 (an untried lesson of the category starved)": replace(base, q1_init_related=-1.0),
                 "Q only (q_weight 1, the choice before issue 35)": replace(base, q_weight=1.0),
                 "Q only and gated refining (before issue 35)": replace(base, q_weight=1.0, gated=True),
                 "alpha 0.3 (former default)": replace(base, alpha=0.3),
                 "no attribution (machine outcomes scored -1)": replace(base, attribute=False),
                 "raw refining rewards (no normalisation)": replace(base, normalise=False)}
    ablation_runs = {name: run_seeds(WORLDS["reference"], config, seeds) for name, config in ablations.items()}
    md += ["## Ablations (reference world, value-driven)", "", *outcomes_table(ablation_runs), "",
           "Each ablation minus the defaults, paired by seed:", "",
           "| ablation | " + " | ".join(LABELS[o] for o in OUTCOMES) + " |", "|---" * (len(OUTCOMES) + 1) + "|"]
    for name, r in list(ablation_runs.items())[1:]:
        diff = margins(r, ablation_runs["defaults"])
        md.append(f"| {name} | " + " | ".join(diff[o].text("{:+.3f}") for o in OUTCOMES) + " |")
    md.append("")
    data["ablations"] = {k: {o: asdict(r.interval(o)) for o in OUTCOMES} for k, r in ablation_runs.items()}
    if not args.quick and args.sweep_seeds > 0:
        md += ["## Sweep: feasible drafts / drafts, one setting at a time around the defaults", ""]
        data["sweep"] = {}
        for world_name, params in WORLDS.items():
            rows = sweep(params, base, range(args.sweep_seeds), q_weight=(0.0, 0.25, 0.5, 0.75, 1.0),
                         q1_init=(-1.0, -0.5, 0.0), q1_init_related=(-1.0, -0.5, 0.0), q_init=(-0.5, 0.0, 0.5),
                         alpha=(0.05, 0.1, 0.3), epsilon=(0.0, 0.1, 0.3), lam=(2, 3, 5))
            md += [f"### {world_name}", "", "| q_weight | q1_init | q1_init_related | q_init (Q2 prior) | alpha | "
                   "epsilon | lambda | feasible drafts / drafts | log speedup best / first feasible |",
                   "|---|---|---|---|---|---|---|---|---|"]
            md += [f"| {c.q_weight} | {c.q1_init} | {c.q1_init_related} | {c.q_init} | {c.alpha} | {c.epsilon} | "
                   f"{c.lam} | {d.text('{:.3f}')} | {g.text('{:.3f}')} |" for c, d, g in rows] + [""]
            data["sweep"][world_name] = [(asdict(c), asdict(d), asdict(g)) for c, d, g in rows]
    md.append(f"_{time.perf_counter() - started:.0f} s on this machine (2 shared cores, under other engineers' load)._")
    text = "\n".join(md) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(text)
    (args.out / "results.json").write_text(json.dumps(data, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
