"""The hidden world of the learning simulation: items, tasks, similarity, and what an answer does.

- Items belong to an op category. Each has a hidden drafting usefulness (useful, harmful or
  neutral: a logit added to the chance of a feasible draft when it is in the context) and a hidden
  refining usefulness (added to the expected log speedup of a refinement). An item helps its own
  category fully and others by ``transfer``.
- Similarity (what a BM25 pool sees) is the category match plus noise, plus ``informed`` times the
  item's usefulness: a similarity score that knows a little about usefulness, as text overlap does.
- A draft with context c on task j is feasible with probability sigmoid(difficulty_j + sum of the
  context's usefulness for j). A refinement is infeasible with probability ``refine_fail``, else it
  changes the log speedup by a normal draw around ``refine_step`` times the context's refining
  usefulness minus ``refine_cost``.
- Noise: a drafting reward is flipped with probability ``flip`` (a flaky gate); with probability
  ``machine`` an attempt is the machine's outcome (nothing judged), and on the ``big_tasks`` share
  of tasks (inputs this machine cannot hold) with probability ``big_machine``.

Everything is drawn from ``random.Random(seed)``; the same parameters and seed give the same world.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class WorldParams:
    categories: int = 6
    items_per_category: int = 20
    tasks: int = 120
    useful_share: float = 0.25
    harmful_share: float = 0.10
    effect: float = 1.2  # logit of a useful (+) / harmful (-) item on a draft of its category
    transfer: float = 0.25  # share of the effect on other categories' tasks
    difficulty_mean: float = -2.5  # draft logit without help: sigmoid(-2.5) = 8%
    difficulty_sd: float = 0.5
    similarity_noise: float = 0.5
    informed: float = 0.3  # similarity's knowledge of usefulness
    refine_step: float = 0.08  # log speedup per unit of refining usefulness in the context
    refine_cost: float = 0.04  # an uninformed refinement is slightly slower on average
    refine_sd: float = 0.10
    refine_fail: float = 0.30
    flip: float = 0.10
    machine: float = 0.05
    big_tasks: float = 0.20
    big_machine: float = 0.80


@dataclass(frozen=True)
class Item:
    item_id: str
    category: int
    draft_use: float  # logit on its own category's drafts
    refine_use: float  # log-speedup units on its own category's refinements

    @property
    def draft_class(self) -> str:
        return "useful" if self.draft_use > 0 else "harmful" if self.draft_use < 0 else "neutral"

    @property
    def refine_class(self) -> str:
        return "useful" if self.refine_use > 0 else "harmful" if self.refine_use < 0 else "neutral"


@dataclass(frozen=True)
class Task:
    task_id: str
    category: int
    difficulty: float
    machine: float  # the chance that an attempt is the machine's outcome


class World:
    def __init__(self, params: WorldParams, seed: int) -> None:
        self.params = params
        rng = random.Random(seed)
        self.items = tuple(
            Item(f"it-{c}-{k:03d}", c, _use(rng, params) * params.effect, _use(rng, params))
            for c in range(params.categories) for k in range(params.items_per_category))
        self.tasks = tuple(Task(f"task-{j:03d}", rng.randrange(params.categories),
                                rng.gauss(params.difficulty_mean, params.difficulty_sd),
                                params.big_machine if rng.random() < params.big_tasks else params.machine)
                           for j in range(params.tasks))
        self._noise = {(i.item_id, t.task_id): rng.gauss(0.0, params.similarity_noise)
                       for i in self.items for t in self.tasks}
        self.by_id = {i.item_id: i for i in self.items}

    def similarity(self, item: Item, task: Task) -> float:
        same = 1.0 if item.category == task.category else 0.0
        return same + self._noise[(item.item_id, task.task_id)] + self.params.informed * item.draft_use / self.params.effect

    def _weight(self, item: Item, task: Task) -> float:
        return 1.0 if item.category == task.category else self.params.transfer

    def draft_chance(self, task: Task, context: list[str]) -> float:
        logit = task.difficulty + sum(self.by_id[i].draft_use * self._weight(self.by_id[i], task) for i in context)
        return 1.0 / (1.0 + math.exp(-logit))

    def refine_mean(self, task: Task, context: list[str]) -> float:
        use = sum(self.by_id[i].refine_use * self._weight(self.by_id[i], task) for i in context)
        return self.params.refine_step * use - self.params.refine_cost


def _use(rng: random.Random, params: WorldParams) -> float:
    draw = rng.random()
    return 1.0 if draw < params.useful_share else -1.0 if draw < params.useful_share + params.harmful_share else 0.0
