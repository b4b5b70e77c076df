"""A campaign: tasks of one build, one backend, one model and one method sharing one memory.

:func:`run_task` is the Prefect-free loop: resume the task's state, then per iteration prepare the
step, call the LLM, verify the candidate and commit, until a budget is spent; then time the first
feasible draft and the best kernel together (evokernel.agent.gain) and distil.
``tasks/campaign.py`` runs the same line with the LLM call and the verification as Prefect tasks.
A campaign id names a campaign; running it again resumes from what the lake holds (see
evokernel.agent.step).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from itertools import groupby
from typing import Callable, Sequence

from evokernel.agent import interrupt, rewards
from evokernel.agent.context import AgentContext
from evokernel.agent.distill import commit_distillation, distill_request
from evokernel.agent.gain import finish_task
from evokernel.agent.runtime import Runtime
from evokernel.agent.state import StepOutcome, TaskState, replay
from evokernel.agent.step import candidate_code, commit_step, complete_attempt, outcome_from_row, prepare_step
from evokernel.agent.verification import verify_candidate
from kernelbench_npu.spec import Build, TaskSpec
from verifier.result import Verdict


@dataclass(frozen=True)
class TaskSummary:
    task_id: str
    attempts: int
    feasible: bool
    first_feasible_iteration: int | None
    best_ms: float | None
    best_speedup: float | None
    stop_reason: str


def plan_tasks(build: Build, task_ids: Sequence[str] = (), order: str = "level") -> tuple[TaskSpec, ...]:
    """The campaign's tasks: the named ones (in the given order) or every runnable task.

    order "level" runs level 1 before level 2 before level 3 (the paper's L1 -> L2 curriculum);
    "given" keeps the manifest (or command-line) order.
    """
    if task_ids:
        tasks = tuple(build.task(t) for t in task_ids)
        quarantined = [t.task_id for t in tasks if t.quarantined]
        if quarantined:
            raise ValueError(f"task {quarantined[0]!r} is quarantined in this build ({build.task(quarantined[0]).lint_reason})")
    else:
        tasks = build.runnable()
    if order == "level":
        tasks = tuple(sorted(tasks, key=lambda t: (t.level, t.task_id)))
    return tasks


def task_waves(specs: Sequence[TaskSpec], width: int) -> list[tuple[TaskSpec, ...]]:
    """Consecutive same-level tasks in groups of at most ``width`` (levels never mix in a wave): what
    the campaign flow runs at once."""
    waves: list[tuple[TaskSpec, ...]] = []
    for _level, group in groupby(specs, key=lambda t: t.level):
        tasks = tuple(group)
        waves += [tasks[i:i + width] for i in range(0, len(tasks), width)]
    return waves


def record_campaign(ctx: AgentContext, build: Build, status: str, reason: str | None = None) -> None:
    """Append the campaign's current state: running at start, then finished, or interrupted / failed
    with the one-line reason (see evokernel.agent.interrupt); any of them resumes by its id."""
    now = datetime.now(timezone.utc)
    previous = ctx.lake.campaign_state(ctx.campaign_id)
    started = previous.started_at if previous else now
    ctx.lake.append("campaigns", [{
        "campaign_id": ctx.campaign_id, "build_hash": build.build_hash, "backend": ctx.backend,
        "model": ctx.model, "method": ctx.policy.name,
        "settings_json": json.dumps(ctx.settings.model_dump(mode="json"), sort_keys=True),
        "status": status, "started_at": started, "finished_at": now if status != "running" else None,
        "recorded_at": now, "status_reason": reason,
    }])


def resume_task(ctx: AgentContext, task: TaskSpec) -> TaskState:
    """Rebuild a task's state from the lake and complete its last committed step if needed."""
    rows = [asdict(a) for a in ctx.lake.task_attempts(ctx.campaign_id, task.task_id)]
    if rows:  # only the last committed step can have missing side effects; completing is idempotent
        trace_id = complete_attempt(ctx, task, ctx.lake.attempt_row(rows[-1]["attempt_id"]).as_dict())
        rows[-1] = {**rows[-1], "trace_item_id": trace_id}
    outcomes = [outcome_from_row(row, row["trace_item_id"]) for row in rows]
    return replay(task.task_id, outcomes, ctx.policy, replay_refine_stats(ctx))


def replay_refine_stats(ctx: AgentContext) -> rewards.RunningStats:
    """The campaign's refining-reward normaliser, rebuilt from its committed attempts."""
    stats = rewards.RunningStats()
    for reward in ctx.lake.refine_rewards(ctx.campaign_id):
        stats = stats.add(reward)
    return stats


def summarise(state: TaskState, stop_reason: str) -> TaskSummary:
    best = next((p for p in state.start_points if p.item_id == state.best_item_id), None)
    return TaskSummary(
        task_id=state.task_id, attempts=state.iterations_done, feasible=bool(state.start_points),
        first_feasible_iteration=state.first_feasible_iteration, best_ms=state.best_ms,
        best_speedup=best.speedup if best else None, stop_reason=stop_reason,
    )


def stop_reason(ctx: AgentContext, state: TaskState) -> str | None:
    """Why the task stops now: the campaign was asked to stop, or a budget is spent (None: go on)."""
    stop = interrupt.stopping()
    if stop is not None:
        return f"{stop.status}: {stop.reason}"
    settings = ctx.settings
    return state.stop_reason(settings.budget, settings.max_tokens_per_task, settings.max_seconds_per_task)


def verify_plan_candidate(runtime: Runtime, task: TaskSpec, code: str | None) -> Verdict | None:
    """The verdict on an extracted candidate (None: the answer had no usable kernel); none is started
    or retried once the campaign was asked to stop (CampaignStopped)."""
    if code is None:
        return None
    if interrupt.stopping():
        raise interrupt.CampaignStopped(interrupt.stopping().reason)
    return verify_candidate(task, code, runtime.ctx.backend, runtime.verify_settings,
                            runtime.ctx.settings.verify_concurrency, sleep=interrupt.pause)


def run_task(runtime: Runtime, task: TaskSpec,
             on_step: Callable[[StepOutcome], None] | None = None) -> TaskSummary:
    """Run (or resume) a task until its budget is spent, then distil it (Prefect-free)."""
    ctx = runtime.ctx
    state = resume_task(ctx, task)
    try:
        while (reason := stop_reason(ctx, state)) is None:
            plan = prepare_step(ctx, task, state)
            completion = runtime.llm.complete(plan.request)
            verdict = verify_plan_candidate(runtime, task, candidate_code(ctx, completion).code)
            with interrupt.committing():
                outcome = commit_step(ctx, plan, completion, verdict)
            state = state.after(outcome, ctx.policy)
            if on_step:
                on_step(outcome)
        if not interrupt.stopping():
            finish_task(ctx, task, state, runtime.verify_settings, ctx.settings.verify_concurrency, interrupt.pause)
        if not interrupt.stopping() and ctx.policy.distills and (request := distill_request(ctx, task)) is not None:
            completion = runtime.llm.complete(request)
            with interrupt.committing():
                commit_distillation(ctx, task, completion)
    except interrupt.CampaignStopped:
        reason = stop_reason(ctx, state) or "stopped"
    return summarise(state, reason)
