"""The value-driven memory learns (benchmarks/memory_learning, small): in a simulated world where
items have a hidden usefulness and rewards are noisy, useful items' Q1 rises above useless ones'
within a stated number of steps, and value-driven retrieval beats similarity-only and random
retrieval at equal budget, with 95% bootstrap intervals over seeds. The simulation runs the product's
retrieval, scoring, attribution and update code; a short run on a real lake makes the same choices
and ends with the same values as the in-memory run (so the simulation's conclusions hold for the lake).

This checks the learning machinery, not the quality of a model.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.memory_learning.__main__ import product_config
from benchmarks.memory_learning.analysis import curves, margins, run_seeds, separation_step
from benchmarks.memory_learning.sim import InMemory, LakeMemory, SimConfig, priors, run
from benchmarks.memory_learning.world import World, WorldParams

# README "How the memory learns": Q1 of useful items separates from useless ones' within 200 steps
SEPARATION_WITHIN = 200


@pytest.fixture(scope="module")
def strategies():
    params, seeds = WorldParams(tasks=60), range(8)
    base = replace(product_config(), record_every=10)
    return {name: run_seeds(params, replace(base, strategy=name), seeds) for name in ("value", "heuristic", "random")}


def test_useful_items_q_rises_above_useless_ones_within_the_stated_steps(strategies):
    points = curves(strategies["value"])
    step = separation_step(points)
    assert step is not None and step <= SEPARATION_WITHIN, points
    last = points[-1][1]
    assert last["useful"].mean > last["neutral"].mean > last["harmful"].mean


@pytest.mark.parametrize("other", ["heuristic", "random"])
def test_value_driven_retrieval_beats_the_others_at_equal_budget(strategies, other):
    margin = margins(strategies["value"], strategies[other])
    assert margin["draft_rate"].low > 0, margin  # more feasible drafts per draft, CI above 0
    assert margin["first_feasible"].high < 0, margin  # fewer attempts to the first feasible kernel
    calls = {name: sum(r.steps for r in runs.results) for name, runs in strategies.items()}
    assert len(set(calls.values())) == 1  # equal budget: the same number of steps (LLM calls) each


def test_the_former_defaults_do_not_learn_to_beat_similarity(strategies):
    """An optimistic prior (every untried item at Q1 = 0, above every item that was ever in a failed
    draft) keeps the greedy choice on untried items: no better than the heuristic."""
    params, seeds = WorldParams(tasks=60), range(8)
    former = run_seeds(params, replace(product_config(), alpha=0.3, q1_init=0.0), seeds)
    assert margins(former, strategies["heuristic"])["draft_rate"].low < 0 < margins(
        strategies["value"], former)["draft_rate"].low


def test_a_real_lake_makes_the_same_choices_and_ends_with_the_same_values(tmp_path):
    world = World(WorldParams(categories=2, items_per_category=6, tasks=4), seed=3)
    config = SimConfig(n=3, lam=2, budget=5, epsilon=0.2, record_every=5)
    memory = InMemory(priors(config))
    expected = run(world, config, seed=11, memory=memory)
    lake = LakeMemory(tmp_path / "lake", world, priors(config))
    try:
        got = run(world, config, seed=11, memory=lake)
        assert got.choices == expected.choices and got.solved == expected.solved
        ids = [i.item_id for i in world.items]
        for stage in (1, 2):
            assert lake.q(ids, stage) == pytest.approx(memory.q(ids, stage))
    finally:
        lake.close()
