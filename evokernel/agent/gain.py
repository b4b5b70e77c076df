"""The paper's within-task figure, measured: when a task ends, its first feasible draft and its best
kernel (the one definition of best, evokernel.agent.state) are timed with the reference in ONE paired
verification, so "speedup over first draft" is a ratio measured in the same rounds with its own CI,
not a bound built from two verifications made at different times under different load.

- :func:`gain_plan`: what to compare (None when the task has no timed best kernel, or its comparison is
  in the lake already: idempotent per campaign and task, so a resumed campaign does not compare again);
- :func:`measure_gain`: the verifier's paired comparison (``verifier.api.compare``), an infrastructure
  error retried like a verification (evokernel.agent.verification), or nothing to time when the best
  kernel is the draft itself (the ratio is exactly 1);
- the row goes to the lake's ``comparisons`` table; reports read it (reports/sql/task_outcomes.sql).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from evokernel.agent import interrupt
from evokernel.agent.context import AgentContext
from evokernel.agent.state import StartPoint, TaskState
from evokernel.agent.verification import VERIFY_RETRY_DELAYS_S, verify_slots
from kernelbench_npu.spec import TaskSpec
from verifier.api import compare as verifier_api_compare
from verifier.monitor.session import InfrastructureError
from verifier.settings import VerifySettings

DRAFT, BEST = "draft", "best"


@dataclass(frozen=True)
class GainPlan:
    task: TaskSpec
    draft: StartPoint  # the first feasible kernel (a draft)
    best: StartPoint  # the best kernel when the task ended

    @property
    def same_kernel(self) -> bool:
        return self.draft.item_id == self.best.item_id


def gain_plan(ctx: AgentContext, task: TaskSpec, state: TaskState) -> GainPlan | None:
    """The comparison a finished task needs, or None (no timed best kernel, or already recorded)."""
    if not state.start_points or state.best_item_id is None:
        return None
    if ctx.lake.comparison_recorded(ctx.campaign_id, task.task_id):
        return None
    best = next(p for p in state.start_points if p.item_id == state.best_item_id)
    return GainPlan(task, state.start_points[0], best)


def measure_gain(ctx: AgentContext, plan: GainPlan, settings: VerifySettings, concurrency: int,
                 compare: Callable[..., Any] | None = None, sleep: Callable[[float], None] = time.sleep) -> dict:
    """The comparisons row of the plan: the paired run's figures, or why there are none."""
    if plan.same_kernel:
        return _row(ctx, plan, ratio=1.0, ratio_ci_low=1.0, ratio_ci_high=1.0, outcome_owner="candidate", seconds=0.0)
    compare = compare or verifier_api_compare
    started, reason = time.perf_counter(), ""
    for attempt in range(len(VERIFY_RETRY_DELAYS_S) + 1):
        try:
            with verify_slots(ctx.backend, concurrency):
                result = compare(plan.task, {DRAFT: plan.draft.code, BEST: plan.best.code}, backend=ctx.backend,
                                 settings=settings)
            return _from_comparison(ctx, plan, result, time.perf_counter() - started)
        except InfrastructureError as exc:  # the machine's: retried like a verification
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if attempt < len(VERIFY_RETRY_DELAYS_S):
            sleep(VERIFY_RETRY_DELAYS_S[attempt])
    return _row(ctx, plan, failed_reason=f"the machine: {reason} (after {len(VERIFY_RETRY_DELAYS_S) + 1} attempts)",
                outcome_owner="machine", seconds=time.perf_counter() - started)


def _from_comparison(ctx: AgentContext, plan: GainPlan, result: Any, seconds: float) -> dict:
    failed = dict(result.failed)
    if failed:
        why = "; ".join(f"{name}: {reason}" for name, reason in failed.items())
        return _row(ctx, plan, failed_reason=why, outcome_owner="candidate", seconds=seconds)
    ratio, draft, best = result.ratio(BEST, DRAFT), result.latency[DRAFT], result.latency[BEST]
    return _row(ctx, plan, ratio=ratio.median, ratio_ci_low=ratio.ci_low, ratio_ci_high=ratio.ci_high,
                draft_speedup=draft.speedup, draft_ci_low=draft.ci_low, draft_ci_high=draft.ci_high,
                best_speedup=best.speedup, best_ci_low=best.ci_low, best_ci_high=best.ci_high,
                draft_ms=draft.candidate_ms, best_ms=best.candidate_ms, reference_ms=best.reference_ms,
                rounds=best.rounds, untrusted_reason=best.untrusted_reason or draft.untrusted_reason,
                outcome_owner="candidate", seconds=seconds)


def _row(ctx: AgentContext, plan: GainPlan, **figures: Any) -> dict:
    return {"campaign_id": ctx.campaign_id, "task_id": plan.task.task_id,
            "draft_attempt_id": attempt_of(plan.draft.item_id), "best_attempt_id": attempt_of(plan.best.item_id),
            "same_kernel": plan.same_kernel, "created_at": datetime.now(timezone.utc), **figures}


def attempt_of(trace_item_id: str) -> str:
    """The attempt a trace item was made from (evokernel.agent.context.trace_item_id_for)."""
    return trace_item_id.removeprefix("trace/")


def finish_task(ctx: AgentContext, task: TaskSpec, state: TaskState, settings: VerifySettings,
                concurrency: int, sleep: Callable[[float], None] = time.sleep) -> dict | None:
    """Measure and record the finished task's gain over its first draft (once); returns the row."""
    plan = gain_plan(ctx, task, state)
    row = measure_gain(ctx, plan, settings, concurrency, sleep=sleep) if plan else None
    if row is not None:
        with interrupt.committing():
            ctx.lake.append("comparisons", [row])
    return row
