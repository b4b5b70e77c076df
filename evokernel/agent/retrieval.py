"""What the LLM sees from memory in one step: start-point choice and context retrieval.

Drafting retrieves every kind with Q1 (plus the backend's API templates); refining shows the
start point and its children, and retrieves traces and best practices with Q2 from the rest of
the lake (the items it shows anyway are excluded from the pool, so each retrieval slot brings
something new). A resumed step reuses the retrievals it already recorded, so nothing is
retrieved (or recorded) twice. Every item shown in
a prompt (retrieved, recorded, a child or the start point itself) is a memory_lake
:class:`RetrievedItem`, with its current Q for the stage.
"""

from __future__ import annotations

import random

from evokernel.agent.context import AgentContext, seed_for
from evokernel.agent.state import StartPoint, TaskState
from kernelbench_npu.spec import TaskSpec
from memory_lake import RetrievalRequest, RetrievedItem

CHILDREN_SHOWN = 3


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


def gather_context(ctx: AgentContext, task: TaskSpec, stage: int, attempt_id: str, record: bool = True,
                   shown: tuple[str, ...] = ()) -> tuple[RetrievedItem, ...]:
    """The stage's retrieved items; ``shown``: ids the prompt holds anyway (the start point and its
    children), left out of the pool so they do not take retrieval slots twice."""
    if not ctx.policy.uses_memory:
        return ()
    recorded = ctx.lake.retrieved_for_attempt(attempt_id)
    if recorded:  # a resumed step shows what was retrieved before
        return recorded
    request = RetrievalRequest(
        attempt_id=attempt_id, task_id=task.task_id, task_text=f"{task.name} {task.category}\n{task.source}",
        category=task.category, backend=ctx.backend, stage=stage, n=ctx.settings.retrieval_n,
        lam=ctx.settings.retrieval_lambda, epsilon=ctx.settings.epsilon,
        seed=seed_for(ctx.campaign_id, attempt_id, "retrieve"), strategy=ctx.policy.retrieval,
        kinds=None if stage == 1 else ("trace", "best_practice"), include_templates=stage == 1,
        exclude_item_ids=shown,
    )
    return tuple(ctx.lake.retrieve(request, record=record))


def start_item(ctx: AgentContext, start: StartPoint, task_id: str) -> RetrievedItem:
    """The start point as shown in the refine prompt, with its current Q2."""
    q2 = ctx.lake.current_q([start.item_id], 2).get(start.item_id, ctx.settings.q_init)
    measured = (f": {start.latency_ms:.4g} ms" if start.latency_ms is not None else ": not timed") + \
        (f", {start.speedup:.2f}x vs reference" if start.speedup is not None else "")
    return RetrievedItem(item_id=start.item_id, kind="trace", title=f"start point (iteration {start.iteration}){measured}",
                         body="", code=start.code, task_id=task_id, rank=0, similarity=0.0, q_value=q2,
                         explored=False, strategy="start")


def children_of(ctx: AgentContext, start: StartPoint) -> tuple[RetrievedItem, ...]:
    """The start point's refinements with their results ("observable child nodes"), with their Q2."""
    children = ctx.lake.children_of(start.item_id, CHILDREN_SHOWN)
    q2 = ctx.lake.current_q([c.item_id for c in children], 2) if children else {}
    return tuple(
        RetrievedItem(item_id=c.item_id, kind=c.kind, title=c.title or "", body=c.body or "", code=c.code or "",
                      task_id=c.task_id, rank=rank, similarity=0.0, q_value=q2.get(c.item_id, ctx.settings.q_init),
                      explored=False, strategy="child")
        for rank, c in enumerate(children)
    )
