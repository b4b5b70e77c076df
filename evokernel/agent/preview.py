"""The prompt of a campaign step, without running the step (what ``evokernel prompt`` prints).

The prompt is built by :func:`evokernel.agent.step.prepare_step`, the function every campaign step
calls, on the lake as it is, which is read and never written: retrievals are not recorded, and a
lake that does not exist yet is created in a temporary directory, seeded as a campaign would seed
it. The step shown is:

- with a campaign id, that campaign's next step on the task, its state replayed from the lake;
- otherwise the first step of a new campaign at the asked stage: stage 1 from nothing; stage 2
  from the task's feasible kernels in the lake (any campaign), the fastest as the best so far and
  the latest one's verifier feedback as the previous attempt's.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from evokernel.agent.campaign import replay_refine_stats
from evokernel.agent.context import AgentContext
from evokernel.agent.rewards import PairedSpeedup
from evokernel.agent.runtime import agent_context, campaign_backend, memory_seeds
from evokernel.agent.state import StartPoint, TaskState, replay
from evokernel.agent.step import StepPlan, outcome_from_row, prepare_step
from evokernel.config import Settings
from kernelbench_npu.spec import TaskSpec, load_build
from memory_lake import Lake
from verifier.backends import get_backend
from verifier.backends.base import Backend

PREVIEW_CAMPAIGN = "prompt-preview"


class PreviewError(ValueError):
    """The asked step cannot be shown (one line, names what is missing)."""


@dataclass(frozen=True)
class PromptPreview:
    plan: StepPlan
    origin: str  # the state the step starts from, in words


@contextmanager
def _read_only_lake(root: Path, backend: Backend) -> Iterator[tuple[Lake, str]]:
    if Lake.exists(root):
        lake = Lake.open(root)
        try:
            yield lake, f"lake {root}"
        finally:
            lake.close()
        return
    with tempfile.TemporaryDirectory(prefix="evokernel-prompt-") as tmp:
        seeds = memory_seeds(backend)
        lake = Lake.create(Path(tmp) / "lake", backend.name, seed_items=seeds)
        try:
            yield lake, (f"no lake at {root} yet: a new one, with the {backend.name} backend's {len(seeds)} seed "
                         "item(s) beyond its scaffold")
        finally:
            lake.close()


def _campaign_method(lake: Lake, campaign_id: str) -> str:
    state = lake.campaign_state(campaign_id)
    if state is None:
        raise PreviewError(f"no campaign {campaign_id!r} in the lake")
    return state.method


def _campaign_state(ctx: AgentContext, task: TaskSpec) -> tuple[TaskState, str]:
    rows = [asdict(a) for a in ctx.lake.task_attempts(ctx.campaign_id, task.task_id)]
    state = replay(task.task_id, [outcome_from_row(r, r["trace_item_id"]) for r in rows], ctx.policy,
                   replay_refine_stats(ctx))
    return state, f"the next step of campaign {ctx.campaign_id} ({len(rows)} attempt(s) on this task so far)"


def _new_campaign_state(ctx: AgentContext, task: TaskSpec, stage: int) -> tuple[TaskState, str]:
    if stage == 1:
        return TaskState(task_id=task.task_id), "the first draft of a new campaign"
    traces = ctx.lake.feasible_traces(task.task_id)
    if not traces:
        raise PreviewError(f"no feasible kernel of task {task.task_id} in the lake: stage 2 refines one "
                           "(run a campaign on the task first, or ask for --stage 1)")
    points = tuple(StartPoint(t.item_id, t.code, t.latency_ms, t.speedup, t.iteration) for t in traces)
    best = _incumbent(points)
    state = TaskState(task_id=task.task_id, iterations_done=len(points), start_points=points,
                      best_ms=best.latency_ms if best else None, best_item_id=best.item_id if best else None,
                      best=PairedSpeedup.of(best.speedup, None, None) if best else None,
                      first_feasible_iteration=0, last_feedback=traces[-1].feedback or None)
    return state, f"a new campaign refining the task's {len(points)} feasible kernel(s) in the lake"


def _incumbent(points: tuple[StartPoint, ...]) -> StartPoint | None:
    """The best kernel as a campaign picks it: the highest paired speedup (the lowest latency only
    when no speedup was measured, e.g. items written by hand)."""
    paired = [p for p in points if p.speedup is not None]
    if paired:
        return max(paired, key=lambda p: p.speedup)
    timed = [p for p in points if p.latency_ms is not None]
    return min(timed, key=lambda p: p.latency_ms) if timed else None


def preview_step(settings: Settings, task_id: str, stage: int | None = None,
                 campaign_id: str | None = None) -> PromptPreview:
    """The plan (request, context, section sizes) of the step described in the module docstring."""
    if stage not in (None, 1, 2):
        raise PreviewError(f"--stage: {stage} is not 1 (drafting) or 2 (refining)")
    build = load_build(settings.build)
    task = build.task(task_id)
    backend = get_backend(campaign_backend(settings, build))
    with _read_only_lake(settings.lake, backend) as (lake, lake_note):
        if campaign_id:
            settings = settings.model_copy(update={"method": _campaign_method(lake, campaign_id)})
        ctx = agent_context(settings, backend, lake, settings.llm, campaign_id or PREVIEW_CAMPAIGN)
        if campaign_id:
            state, origin = _campaign_state(ctx, task)
        else:
            state, origin = _new_campaign_state(ctx, task, stage or 1)
        if stage is not None and state.stage(ctx.policy) != stage:
            raise PreviewError(f"{origin} is at stage {state.stage(ctx.policy)}, not {stage} "
                               f"(method {ctx.policy.name})")
        plan = prepare_step(ctx, task, state, record=False)
    return PromptPreview(plan=plan, origin=f"{origin}; {lake_note}")
