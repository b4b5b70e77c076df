"""A simulated campaign through the product's own learning code, and the memories it runs on.

Per task of the world (in order, one shared memory that grows by the lessons of finished tasks):
the pool is the most similar items in memory (the world's similarity stands in for BM25); each of
``budget`` iterations drafts until a feasible kernel, then refines. What is the product's and what
is simulated:

- the request: the agent's stage rules (evokernel.agent.retrieval.stage_rules: refining's relevance
  floor for other categories) and its prior and blend weight; ``gated`` adds the rules before issue
  35 (the task's category first, other categories only with Q2 > 0) for comparison;
- choosing the context: memory_lake.retrieval.select (the rules, then epsilon-greedy by the blend of
  similarity and the stage's Q, or the heuristic's similarity order; "random" is the same code with
  epsilon = 1);
- the verdict: simulated (world.py), as a real verifier.result.Verdict;
- attribution, reward and the reward applied: evokernel.agent.scoring.score (attribution included);
- the update: memory_lake.values.q_step in memory (:class:`InMemory`), or a real Lake's
  retrieve/update_values (:class:`LakeMemory`; the fast test checks both give the same run).

Variants for the ablations: ``attribute=False`` scores the machine's outcomes as failures (the
behaviour before attribution); ``normalise=False`` applies raw refining rewards instead of the
normalised ones.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from benchmarks.memory_learning.world import Item, Task, World, WorldParams
from evokernel.agent.context import seed_for
from evokernel.agent.retrieval import stage_rules
from evokernel.agent.rewards import PairedSpeedup, RunningStats
from evokernel.agent.scoring import score
from memory_lake import Lake, NewItem, RetrievalRequest, ValueUpdate
from memory_lake.retrieval import Candidate, ItemFacts, select
from memory_lake.values import q_step
from verifier.result import GateResult, LatencyResult, Verdict

STRATEGIES = ("value", "heuristic", "random")


@dataclass(frozen=True)
class SimConfig:
    strategy: str = "value"  # value | heuristic | random
    alpha: float = 0.3
    epsilon: float = 0.1
    n: int = 5
    lam: int = 3
    budget: int = 10
    q_init: float = 0.0  # the Q2 of an item never used in a refinement (and the lake's q_init)
    q1_init: float = -1.0  # the Q1 of an item never used in a draft (the agent's q1_init setting)
    q1_init_related: float | None = None  # the Q1 of an untried item of the task's category (None: q1_init)
    q_weight: float = 1.0  # the blend's weight of Q: (1 - w) z(similarity) + w z(Q) (1: Q only)
    min_relevance: float = 0.3  # refining: other categories' floor (the agent's refine_min_relevance)
    gated: bool = False  # refining as before issue 35: the task's category first, others only with Q2 > 0
    category_first: bool = False  # refining: the task's category first, then others (no Q2 bound)
    attribute: bool = True
    normalise: bool = True
    record_every: int = 20  # steps between two points of the Q curves


@dataclass
class RunResult:
    solved: list[bool] = field(default_factory=list)  # per task: a feasible kernel within the budget
    first_feasible: list[int | None] = field(default_factory=list)
    gain: list[float | None] = field(default_factory=list)  # log(best / first feasible) per solved task
    curve: list[tuple[int, dict[str, float], dict[str, float]]] = field(default_factory=list)  # step, Q1, Q2 by class
    choices: list[tuple[str, ...]] = field(default_factory=list)  # the contexts, in order (fidelity check)
    levels: list[int] = field(default_factory=list)  # per task
    steps: int = 0
    drafts: int = 0  # judged drafts
    feasible_drafts: int = 0
    refines: int = 0  # refining steps
    refines_with_items: int = 0  # refining steps whose context held at least one item
    refine_items_other: int = 0  # items of another category in refining contexts
    refine_items: int = 0

    @property
    def draft_rate(self) -> float:
        return self.feasible_drafts / self.drafts if self.drafts else float("nan")


class Memory(Protocol):
    def pick(self, pool: list[Candidate], req: RetrievalRequest, facts: dict[str, ItemFacts]) -> list[str]: ...
    def update(self, item_ids: list[str], stage: int, reward: float, alpha: float) -> None: ...
    def q(self, item_ids: list[str], stage: int) -> dict[str, float]: ...
    def moved(self, item_id: str, stage: int) -> bool: ...


class InMemory:
    """Q values in a dict, the lake's rule (q_step) applied in the lake's order; ``prior``: the Q of
    an item never updated, per stage; an item's first update starts from the Q it was chosen with
    (the agent's rule: its prior, evokernel.agent.step)."""

    def __init__(self, prior: dict[int, float]) -> None:
        self.prior, self._q, self._chosen = prior, {}, {}

    def q(self, item_ids, stage):
        return {i: self._q.get((i, stage), self.prior[stage]) for i in item_ids}

    def pick(self, pool, req, facts):
        untried = {c.item_id for c in pool if (c.item_id, req.stage) not in self._q}
        q = self.q([c.item_id for c in pool], req.stage)
        chosen = select([Candidate(c.item_id, c.similarity, q[c.item_id]) for c in pool], req, facts, untried)
        self._chosen = {ch.candidate.item_id: ch.candidate.q for ch in chosen}
        return [ch.candidate.item_id for ch in chosen]

    def update(self, item_ids, stage, reward, alpha):
        for item_id in dict.fromkeys(item_ids):
            before = self._q.get((item_id, stage), self._chosen.get(item_id, self.prior[stage]))
            self._q[(item_id, stage)] = q_step(before, reward, alpha)

    def moved(self, item_id: str, stage: int) -> bool:
        return (item_id, stage) in self._q


class LakeMemory:
    """The same run on a real Lake: Lake.retrieve (pool from the world) and Lake.update_values."""

    def __init__(self, root: Path, world: World, prior: dict[int, float]) -> None:
        self._pool: list[Candidate] = []
        self._chosen: dict[str, float] = {}
        self.prior = prior
        self._moved: set[tuple[str, int]] = set()
        self.lake = Lake.create(root, "sim", q_init=prior[2], scorer=self)
        self.lake.add_items([NewItem(kind=_kind(i), backend="sim", category=str(i.category), item_id=i.item_id,
                                     title=i.item_id, body=f"simulated item {i.item_id}") for i in world.items])

    def pool(self, ctx, req, kinds, k):  # the SimilarityScorer protocol
        return self._pool[:k]

    def pick(self, pool, req, facts):
        self._pool = pool  # the lake reads the same facts from its items rows
        chosen = self.lake.retrieve(req, record=False)
        self._chosen = {r.item_id: r.q_value for r in chosen}
        return [r.item_id for r in chosen]

    def update(self, item_ids, stage, reward, alpha):
        self.lake.update_values([ValueUpdate(i, stage, reward, alpha, prior=self._chosen.get(i, self.prior[stage]))
                                 for i in dict.fromkeys(item_ids)])
        self._moved.update((i, stage) for i in item_ids)

    def moved(self, item_id: str, stage: int) -> bool:
        return (item_id, stage) in self._moved

    def q(self, item_ids, stage):
        return self.lake.current_q(item_ids, stage, self.prior[stage])

    def close(self) -> None:
        self.lake.close()


def _verdict(gates: tuple[bool, ...], speedup: float | None = None, infra: str = "") -> Verdict:
    names = ("hack", "compile", "correctness", "latency")
    results = tuple(GateResult(n, ok, "" if ok else f"{n} failed (simulated)", 0.0) for n, ok in zip(names, gates))
    latency = LatencyResult(1.0, speedup, speedup, speedup, speedup, 30) if speedup is not None else None
    return Verdict("sim", "sim", "sim", results, latency=latency, infrastructure_error=infra)


MACHINE = _verdict((), infra="simulated: the reference worker ran out of memory")
FAILED = _verdict((True, True, False))


def run(world: World, config: SimConfig, seed: int, memory: Memory | None = None) -> RunResult:
    """One simulated campaign over the world's tasks (see the module docstring)."""
    memory = memory or InMemory(priors(config))
    rng, result, stats = random.Random(seed), RunResult(), RunningStats()
    learns = config.strategy == "value"
    for index, task in enumerate(world.tasks):
        items = world.available(index)
        best = first = start = None
        for iteration in range(config.budget):
            stage = 1 if best is None else 2
            req = _request(config, task, stage, iteration, seed)
            pool, facts = _pool(world, items, task, req)
            context = memory.pick(pool, req, facts)
            result.choices.append(tuple(context))
            _count_context(result, world, task, stage, context)
            verdict, speed = _outcome(world, task, stage, context, best, rng)
            if stage == 1 and not verdict.infrastructure_error:
                result.drafts += 1
                result.feasible_drafts += speed is not None
            scored = score(stage, verdict if config.attribute or not verdict.infrastructure_error else FAILED,
                           PairedSpeedup.of(best, best, best) if best else None, stats, learns)
            if scored.norm is not None:
                stats = scored.norm
            reward = scored.reward_applied if config.normalise or stage == 1 else scored.reward
            if learns and reward is not None:
                if stage == 1 and rng.random() < world.params.flip:
                    reward = -reward  # a noisy reward: the learning signal lies, the outcome does not
                memory.update(context, stage, reward, config.alpha)
            if speed is not None:
                first = first if first is not None else iteration
                best = speed if best is None else max(best, speed)
                if first == iteration:
                    start = speed
            result.steps += 1
            if result.steps % config.record_every == 0:
                result.curve.append((result.steps, _by_class(world, memory, 1), _by_class(world, memory, 2)))
        result.solved.append(best is not None)
        result.first_feasible.append(first)
        result.gain.append(math.log(best / start) if best is not None else None)
        result.levels.append(task.level)
    return result


def _pool(world: World, items: tuple[Item, ...], task: Task, req: RetrievalRequest
          ) -> tuple[list[Candidate], dict[str, ItemFacts]]:
    """The request's pool by similarity (overfetched as the lake does before its rules) and the facts
    its rules read (every simulated item is a best practice of its category)."""
    ranked = sorted((Candidate(i.item_id, world.similarity(i, task)) for i in items),
                    key=lambda c: (-c.similarity, c.item_id))[: req.pool_size * req.overfetch]
    return ranked, {c.item_id: ItemFacts(_kind(world.by_id[c.item_id]), str(world.by_id[c.item_id].category),
                                         None, None) for c in ranked}


def _kind(item: Item) -> str:
    """A seed item stands for backend knowledge (an API template), a born one for a distilled lesson."""
    return "api_template" if item.born < 0 else "best_practice"


def _count_context(result: RunResult, world: World, task: Task, stage: int, context: list[str]) -> None:
    if stage != 2:
        return
    result.refines += 1
    result.refines_with_items += bool(context)
    result.refine_items += len(context)
    result.refine_items_other += sum(world.by_id[i].category != task.category for i in context)


def priors(config: SimConfig) -> dict[int, float]:
    return {1: config.q1_init, 2: config.q_init}


def _request(config: SimConfig, task: Task, stage: int, iteration: int, seed: int) -> RetrievalRequest:
    strategy = "heuristic" if config.strategy == "heuristic" else "value"
    epsilon = 1.0 if config.strategy == "random" else config.epsilon if config.strategy == "value" else 0.0
    rules = stage_rules(stage, config.min_relevance)
    if config.gated and stage == 2:
        rules.update(category_first=True, other_categories_min_q=0.0 if config.strategy == "value" else None)
    elif config.category_first and stage == 2:
        rules.update(category_first=True)
    return RetrievalRequest(attempt_id=f"{task.task_id}/{iteration}", task_id=task.task_id, task_text="",
                            category=str(task.category), backend="sim", stage=stage, n=config.n, lam=config.lam,
                            epsilon=epsilon, seed=seed_for(seed, task.task_id, iteration), strategy=strategy,
                            include_templates=False, q_prior=priors(config)[stage], q_weight=config.q_weight,
                            q_prior_related=config.q1_init_related if stage == 1 else None, **rules)


def _outcome(world: World, task: Task, stage: int, context: list[str], best: float | None,
             rng: random.Random) -> tuple[Verdict, float | None]:
    """The verdict of the simulated answer, and the kernel's speedup when it is feasible."""
    if rng.random() < task.machine:
        return MACHINE, None
    if stage == 1:
        if rng.random() < world.draft_chance(task, context):
            return _verdict((True, True, True, True), 1.0), 1.0
        return FAILED, None
    if rng.random() < world.params.refine_fail:
        return FAILED, None
    speed = best * math.exp(rng.gauss(world.refine_mean(task, context), world.params.refine_sd))
    return _verdict((True, True, True, True), speed), speed


def _by_class(world: World, memory: Memory, stage: int) -> dict[str, float]:
    """Mean Q of the items of each hidden class (useful, neutral, harmful) for a stage, over the items
    whose Q has moved (an item never retrieved says nothing about learning)."""
    q = memory.q([i.item_id for i in world.items], stage)
    out: dict[str, float] = {}
    for cls in ("useful", "neutral", "harmful"):
        ids = [i.item_id for i in world.items if (i.draft_class if stage == 1 else i.refine_class) == cls
               and memory.moved(i.item_id, stage)]
        out[cls] = sum(q[i] for i in ids) / len(ids) if ids else float("nan")
    return out


def default_world(seed: int, **overrides) -> World:
    return World(WorldParams(**overrides), seed)
