"""What the LLM sees from memory in one step: start-point choice and context retrieval.

Drafting retrieves every kind by Q1 and relevance, api_templates included: the backend scaffold is
always in the prompt (it keeps the candidate contract), so a template whose text the scaffold
already shows is never a candidate, and any other template competes for a slot like any item (the
paper's cold start). Refining shows the start point and its children, and retrieves what can make
this kernel faster: other tasks' optimisation traces (feasible and timed; of each task only its
fastest) and best practices, of any category; another category's item must reach a relevance floor
(``refine_min_relevance`` of the best candidate's similarity), so a refine prompt gets fewer items
rather than noise. Value-driven methods choose by ``(1 - w) z(similarity) + w z(Q)`` within the pool
(memory_lake.retrieval), an item never tried at the stage holding its prior (Q1: ``q1_init``, or
``q1_init_related`` for an item of the task itself or its op category, such as a lesson distilled for
it; Q2: the lake's ``q_init``): an untried lesson from another task competes by its similarity until its Q is
known, then Q decides (issue 35: behind a "Q2 > 0" gate no other category's item was ever shown, so
none ever earned a Q2). A failed trace is shown by its lesson (evokernel.agent.lessons), not its code.

No slot is spent on what the prompt already shows: the items it holds anyway (start point,
children, scaffold-covered templates) are left out of the pool, and a chosen item whose code or text
repeats something already in the prompt is skipped for the next choice (the choice is sequential,
so this equals choosing without it). A resumed step reuses the retrievals it already recorded, so
nothing is retrieved (or recorded) twice. Every item shown in a prompt (retrieved, recorded, a
child or the start point itself) is a memory_lake :class:`RetrievedItem`, with its current Q for
the stage.
"""

from __future__ import annotations

import random
from dataclasses import replace

from evokernel.agent.context import AgentContext, seed_for
from evokernel.agent.lessons import as_lessons
from evokernel.agent.state import StartPoint, TaskState
from evokernel.prompts import repeat_of
from evokernel.prompts.dedup import ShownTexts
from kernelbench_npu.spec import TaskSpec
from memory_lake import RetrievalRequest, RetrievedItem

CHILDREN_SHOWN = 3
REFINE_KINDS = ("trace", "best_practice")


def choose_start_point(ctx: AgentContext, state: TaskState, attempt_id: str) -> StartPoint:
    """evokernel: epsilon-greedy by Q2 (ties to the faster kernel); baselines: the fastest kernel.
    Faster = the higher paired speedup (as the incumbent), then the lower latency for kernels
    without one: raw latencies of two verifications follow the machine's load."""
    points = state.start_points
    fastest = sorted(points, key=lambda p: (p.speedup is None, -(p.speedup or 0.0), p.latency_ms is None,
                                            p.latency_ms or 0.0, p.iteration))
    if ctx.policy.start_point != "q2" or len(points) == 1:
        return fastest[0]
    rng = random.Random(seed_for(ctx.campaign_id, attempt_id, "start"))
    if rng.random() < ctx.settings.epsilon:
        return rng.choice(points)
    q2 = ctx.lake.current_q([p.item_id for p in points], 2)
    return max(fastest, key=lambda p: q2.get(p.item_id, ctx.settings.q_init))


def stage_rules(stage: int, min_relevance: float) -> dict:
    """The relevance rules of a stage's retrieval request (memory_lake.RetrievalRequest fields), the
    agent's and the learning simulation's (benchmarks/memory_learning). Both stages: of each task's
    working kernels only its fastest (a slower variant of a kernel shown adds kilobytes, not a lesson).
    Refining: other tasks' optimisation traces and best practices (the task's own kernels are the start
    point and its children), another category's only above the relevance floor."""
    if stage == 1:
        return dict(fastest_trace_per_task=True)
    return dict(kinds=REFINE_KINDS, feasible_traces_only=True, fastest_trace_per_task=True,
                other_tasks_traces_only=True, min_relevance=min_relevance, overfetch=4)


def gather_context(ctx: AgentContext, task: TaskSpec, stage: int, attempt_id: str, record: bool = True,
                   shown: tuple[str, ...] = (), texts: ShownTexts | None = None) -> tuple[RetrievedItem, ...]:
    """The stage's retrieved items (failed traces as their lessons). ``shown``: ids the prompt holds
    anyway (the start point and its children), left out of the pool; ``texts``: what the prompt shows
    before its retrieved items (evokernel.prompts.shown_before_memory), so that no chosen item repeats it."""
    if not ctx.policy.uses_memory or ctx.settings.retrieval_n == 0:
        return ()
    recorded = ctx.lake.retrieved_for_attempt(attempt_id)
    if recorded:  # a resumed step shows what was retrieved before
        return as_lessons(ctx.lake, recorded)
    texts = texts if texts is not None else ShownTexts(ctx.scaffold)
    excluded = shown + (_scaffold_templates(ctx, texts) if stage == 1 else ())
    request = retrieval_request(ctx, task, stage, attempt_id, excluded)
    chosen = _without_repeats(as_lessons(ctx.lake, ctx.lake.retrieve(request, record=False)), texts, request.n)
    if record and chosen:
        ctx.lake.append("retrievals", [{"attempt_id": attempt_id, "item_id": r.item_id, "stage": stage,
                                        "rank": r.rank, "similarity": r.similarity, "q_value": r.q_value,
                                        "explored": r.explored, "strategy": r.strategy} for r in chosen])
    return chosen


def retrieval_request(ctx: AgentContext, task: TaskSpec, stage: int, attempt_id: str,
                      excluded: tuple[str, ...]) -> RetrievalRequest:
    """The step's retrieval: a pool by similarity, the stage's rules, the method's choice."""
    n, settings = ctx.settings.retrieval_n, ctx.settings
    return RetrievalRequest(
        attempt_id=attempt_id, task_id=task.task_id, task_text=f"{task.name} {task.category}\n{task.source}",
        category=task.category, backend=ctx.backend, stage=stage, n=n, spare=n,  # spare choices replace repeats
        lam=settings.retrieval_lambda, epsilon=settings.epsilon,
        seed=seed_for(ctx.campaign_id, attempt_id, "retrieve"), strategy=ctx.policy.retrieval,
        include_templates=False, exclude_item_ids=excluded,
        q_prior=settings.q1_init if stage == 1 else None, q_weight=settings.retrieval_q_weight,
        q_prior_related=settings.q1_init_related if stage == 1 else None,
        **stage_rules(stage, settings.refine_min_relevance))


def _without_repeats(items: tuple[RetrievedItem, ...], texts: ShownTexts, n: int) -> tuple[RetrievedItem, ...]:
    """The first n items, in choice order, that repeat nothing the prompt shows (nor each other)."""
    kept: list[RetrievedItem] = []
    for item in items:
        if len(kept) == n:
            break
        if repeat_of(item.body, item.code, texts):
            continue
        label = f"memory item {len(kept) + 1}"
        texts.add_code(item.code, label)
        texts.add(item.body, label)
        kept.append(replace(item, rank=len(kept)))
    return tuple(kept)


def _scaffold_templates(ctx: AgentContext, texts: ShownTexts) -> tuple[str, ...]:
    """The backend's api_template items whose text the scaffold in the prompt already shows."""
    return tuple(t.item_id for t in ctx.lake.template_items(ctx.backend) if texts.in_scaffold(t.body, t.code))


def start_item(ctx: AgentContext, start: StartPoint, task_id: str) -> RetrievedItem:
    """The start point as shown in the refine prompt, with its current Q2."""
    q2 = ctx.lake.current_q([start.item_id], 2).get(start.item_id, ctx.settings.q_init)
    measured = (f": {start.latency_ms:.4g} ms" if start.latency_ms is not None else ": not timed") + \
        (f", {start.speedup:.2f}x vs reference" if start.speedup is not None else "")
    return RetrievedItem(item_id=start.item_id, kind="trace", title=f"start point (iteration {start.iteration}){measured}",
                         body="", code=start.code, task_id=task_id, rank=0, similarity=0.0, q_value=q2,
                         explored=False, strategy="start")


def children_of(ctx: AgentContext, start: StartPoint) -> tuple[RetrievedItem, ...]:
    """The start point's refinements with their results ("observable child nodes"), with their Q2;
    a failed one as its lesson."""
    children = ctx.lake.children_of(start.item_id, CHILDREN_SHOWN)
    q2 = ctx.lake.current_q([c.item_id for c in children], 2) if children else {}
    return as_lessons(ctx.lake, tuple(
        RetrievedItem(item_id=c.item_id, kind=c.kind, title=c.title or "", body=c.body or "", code=c.code or "",
                      task_id=c.task_id, rank=rank, similarity=0.0, q_value=q2.get(c.item_id, ctx.settings.q_init),
                      explored=False, strategy="child", feasible=c.feasible, source_attempt_id=c.source_attempt_id)
        for rank, c in enumerate(children)
    ))
