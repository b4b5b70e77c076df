"""What the LLM sees from memory in one step: start-point choice and context retrieval.

Drafting retrieves every kind with Q1 (plus the backend's API templates); refining retrieves
traces and best practices with Q2 plus the start point's children. A resumed step reuses the
retrievals it already recorded, so nothing is retrieved (or recorded) twice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files

from evokernel.agent.context import AgentContext, seed_for
from evokernel.agent.state import StartPoint, TaskState
from kernelbench_npu.spec import TaskSpec
from memory_lake import RetrievalRequest

_SQL = files("evokernel.agent") / "sql"
CHILDREN_SHOWN = 3


@dataclass(frozen=True)
class ContextItem:
    """A memory item in a prompt (memory_lake.RetrievedItem has the same attributes)."""

    item_id: str
    kind: str
    title: str
    body: str
    code: str
    q_value: float


@lru_cache(maxsize=None)
def sql(name: str) -> str:
    """The text of evokernel/agent/sql/<name>.sql (read once per process)."""
    return (_SQL / f"{name}.sql").read_text()


def choose_start_point(ctx: AgentContext, state: TaskState, attempt_id: str) -> StartPoint:
    """evokernel: epsilon-greedy by Q2 (ties to the faster kernel); baselines: the fastest kernel."""
    points = state.start_points
    by_latency = sorted(points, key=lambda p: (p.latency_ms is None, p.latency_ms or 0.0, p.iteration))
    if ctx.policy.start_point != "q2" or len(points) == 1:
        return by_latency[0]
    rng = random.Random(seed_for(ctx.campaign_id, attempt_id, "start"))
    if rng.random() < ctx.settings.epsilon:
        return rng.choice(points)
    q2 = ctx.lake.current_q([p.item_id for p in points], 2)
    return max(by_latency, key=lambda p: q2.get(p.item_id, ctx.settings.q_init))


def gather_context(ctx: AgentContext, task: TaskSpec, stage: int, start: StartPoint | None,
                   attempt_id: str) -> tuple[ContextItem, ...]:
    if not ctx.policy.uses_memory:
        return ()
    recorded = ctx.lake.query(sql("retrieved_for_attempt"), {"attempt_id": attempt_id}).to_pylist()
    if recorded:
        return tuple(_context_item(row) for row in recorded)
    request = RetrievalRequest(
        attempt_id=attempt_id, task_id=task.task_id, task_text=f"{task.name} {task.category}\n{task.source}",
        category=task.category, backend=ctx.backend, stage=stage, n=ctx.settings.retrieval_n,
        lam=ctx.settings.retrieval_lambda, epsilon=ctx.settings.epsilon,
        seed=seed_for(ctx.campaign_id, attempt_id, "retrieve"), strategy=ctx.policy.retrieval,
        kinds=None if stage == 1 else ("trace", "best_practice"), include_templates=stage == 1,
        exclude_item_ids=(start.item_id,) if start else (),
    )
    return tuple(_context_item(item) for item in ctx.lake.retrieve(request))


def children_of(ctx: AgentContext, start: StartPoint) -> tuple[ContextItem, ...]:
    """The start point's refinements with their results ("observable child nodes")."""
    rows = ctx.lake.query(sql("children_of"), {"parent_item_id": start.item_id, "limit": CHILDREN_SHOWN})
    return tuple(
        ContextItem(r["item_id"], r["kind"], r["title"], r["body"] or "", r["code"] or "", 0.0)
        for r in rows.to_pylist()
    )


def _context_item(item) -> ContextItem:
    get = item.get if isinstance(item, dict) else lambda k: getattr(item, k)
    return ContextItem(get("item_id"), get("kind"), get("title") or "", get("body") or "",
                       get("code") or "", float(get("q_value") or 0.0))
