"""The hidden world of the learning simulation: items, tasks, similarity, and what an answer does.

- Items belong to an op category. Each has a hidden drafting usefulness (useful, harmful or
  neutral: a logit added to the chance of a feasible draft when it is in the context) and a hidden
  refining usefulness (added to the expected log speedup of a refinement). An item helps its own
  category fully, a category it is related to by ``related_transfer`` and others by ``transfer``.
- The memory grows: besides the seed items (``items_per_category`` per level-1 category), every
  finished task adds ``lessons_per_task`` distilled lessons of its category (useful with probability
  ``lesson_useful_share``), which later tasks can retrieve.
- Levels (``levels = 2``, as KernelBench's L1 -> L2): the second half of the tasks are level 2, each
  of one of ``level2_categories`` fused categories, each related to two level-1 categories (a matmul
  + Mish task to matmul and to activations); level-2 categories have no seed items, and with many of
  them a level-2 task seldom finds a lesson of its own category: what it can use comes from level 1.
- Similarity (what a BM25 pool sees) is the category match (1; ``related_similarity`` for a related
  category) plus noise, plus ``informed`` times the item's usefulness: a similarity score that knows
  a little about usefulness, as text overlap does.
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
    categories: int = 6  # per level
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
    lessons_per_task: int = 0  # lessons distilled after each task (0: the seed items only)
    lesson_useful_share: float = 0.5
    levels: int = 1  # 2: the second half of the tasks are level 2, in fused categories
    level2_categories: int = 6
    related_transfer: float = 0.8  # share of the effect on a related category's tasks (level 1 -> 2)
    related_similarity: float = 0.6  # similarity of an item to a task of a related category


@dataclass(frozen=True)
class Item:
    item_id: str
    category: int
    draft_use: float  # logit on its own category's drafts
    refine_use: float  # log-speedup units on its own category's refinements
    born: int = -1  # the index of the task after which it exists (-1: a seed item)

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
    level: int = 1


class World:
    def __init__(self, params: WorldParams, seed: int) -> None:
        self.params = params
        rng = random.Random(seed)
        c = params.categories
        self.seeds = tuple(
            Item(f"it-{k}-{i:03d}", k, _use(rng, params.useful_share, params) * params.effect,
                 _use(rng, params.useful_share, params))
            for k in range(c) for i in range(params.items_per_category))
        self.tasks = tuple(self._task(rng, j) for j in range(params.tasks))
        self.lessons = tuple(
            Item(f"le-{j:03d}-{i}", t.category, _use(rng, params.lesson_useful_share, params) * params.effect,
                 _use(rng, params.lesson_useful_share, params), born=j)
            for j, t in enumerate(self.tasks) for i in range(params.lessons_per_task))
        self.items = self.seeds + self.lessons
        self._noise = {(i.item_id, t.task_id): rng.gauss(0.0, params.similarity_noise)
                       for i in self.items for t in self.tasks}
        self.by_id = {i.item_id: i for i in self.items}

    def _task(self, rng: random.Random, j: int) -> Task:
        p = self.params
        level = 2 if p.levels == 2 and j >= p.tasks // 2 else 1
        category = rng.randrange(p.level2_categories) + p.categories if level == 2 else rng.randrange(p.categories)
        return Task(f"task-{j:03d}", category, rng.gauss(p.difficulty_mean, p.difficulty_sd),
                    p.big_machine if rng.random() < p.big_tasks else p.machine, level)

    def available(self, task_index: int) -> tuple[Item, ...]:
        """The items in memory when the task starts: seeds and the lessons of earlier tasks."""
        return tuple(i for i in self.items if i.born < task_index)

    def related(self, item: Item, task: Task) -> bool:
        """Level-2 category c + k fuses the level-1 categories k and k + 1 (mod categories)."""
        c = self.params.categories
        return task.category >= c and item.category < c and (task.category - c - item.category) % c in (0, c - 1)

    def similarity(self, item: Item, task: Task) -> float:
        match = 1.0 if item.category == task.category else self.params.related_similarity \
            if self.related(item, task) else 0.0
        return match + self._noise[(item.item_id, task.task_id)] + self.params.informed * item.draft_use / self.params.effect

    def _weight(self, item: Item, task: Task) -> float:
        if item.category == task.category:
            return 1.0
        return self.params.related_transfer if self.related(item, task) else self.params.transfer

    def draft_chance(self, task: Task, context: list[str]) -> float:
        logit = task.difficulty + sum(self.by_id[i].draft_use * self._weight(self.by_id[i], task) for i in context)
        return 1.0 / (1.0 + math.exp(-logit))

    def refine_mean(self, task: Task, context: list[str]) -> float:
        use = sum(self.by_id[i].refine_use * self._weight(self.by_id[i], task) for i in context)
        return self.params.refine_step * use - self.params.refine_cost


def _use(rng: random.Random, useful_share: float, params: WorldParams) -> float:
    draw = rng.random()
    return 1.0 if draw < useful_share else -1.0 if draw < useful_share + params.harmful_share else 0.0
