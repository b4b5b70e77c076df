"""Prefect tasks of the campaign flow.

``run_campaign_task`` runs one benchmark task of a campaign in its own runtime (its own lake handle,
LLM client and verifier), so tasks can run in threads or Dask worker processes; inside it, one
``campaign-step`` task per iteration, with the LLM call and the verification as nested tasks so each
gets its own retry rule (LLM: retryable errors only; verification: infrastructure errors only).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from prefect import get_run_logger, task

from evokernel.agent.campaign import replay_refine_stats, run_task
from evokernel.agent.context import AgentContext, VerifierInfrastructureError
from evokernel.agent.distill import distill_task
from evokernel.agent.progress import ProgressEvent, emit
from evokernel.agent.rewards import RunningStats
from evokernel.agent.runtime import Runtime, open_runtime
from evokernel.agent.state import StepOutcome, TaskState
from evokernel.agent.step import StepResult, run_step
from evokernel.config import Settings
from evokernel.llm.base import LLM, Completion, LLMRequest
from evokernel.llm.errors import LLMError
from kernelbench_npu.spec import TaskSpec
from tasks.defaults import CAMPAIGN_TASK, DISTILL_TASK, LLM_TASK, STEP_TASK, VERIFY_TASK, verify_tag
from verifier.result import Verdict


def _raised(state, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    try:
        state.result()
    except kinds as exc:  # type: ignore[misc]
        return exc
    except BaseException:
        return None
    return None


def retry_llm_error(task, task_run, state) -> bool:
    """Retry only retryable LLM errors (rate limit, 5xx, timeout, connection)."""
    exc = _raised(state, (LLMError,))
    return bool(exc is not None and getattr(exc, "retryable", False))


def retry_infrastructure(task, task_run, state) -> bool:
    """Retry a verification only when the verifier itself failed, never for a failed gate."""
    return _raised(state, (VerifierInfrastructureError,)) is not None


@task(name="llm-generate", retry_condition_fn=retry_llm_error, **LLM_TASK)
def llm_generate(llm: LLM, request: LLMRequest) -> Completion:
    return llm.complete(request)


@task(name="verify", retry_condition_fn=retry_infrastructure, **VERIFY_TASK)
def verify_candidate(verify_fn, spec: TaskSpec, code: str) -> Verdict:
    verdict = verify_fn(spec, code)
    if verdict.infrastructure_error:
        raise VerifierInfrastructureError(f"{spec.task_id}: {verdict.infrastructure_error}")
    return verdict


@task(name="campaign-step", task_run_name="{spec.task_id} #{state.iterations_done}", **STEP_TASK)
def campaign_step(ctx: AgentContext, spec: TaskSpec, state: TaskState, stats: RunningStats) -> StepResult:
    return run_step(ctx, spec, state, stats)


@task(name="distill", task_run_name="distill {spec.task_id}", retry_condition_fn=retry_llm_error, **DISTILL_TASK)
def distill(runtime: Runtime, spec: TaskSpec) -> tuple[str, ...]:
    """Experience summaries and best practices from a finished task (skipped if already done)."""
    return distill_task(runtime.ctx, runtime.llm, spec)


@task(name="campaign-task", task_run_name="{task_id}", **CAMPAIGN_TASK)
def run_campaign_task(settings: dict[str, Any], campaign_id: str, task_id: str) -> dict[str, Any]:
    """Run (or resume) one task of a campaign until its budget is spent, then distil it."""
    runtime = with_prefect_tasks(open_runtime(Settings(**settings), campaign_id))
    ctx = runtime.ctx
    try:
        spec = runtime.build.task(task_id)
        emit(ProgressEvent("task-start", campaign_id, task_id))
        summary, _ = run_task(ctx, spec, replay_refine_stats(ctx), on_step=_step_logger(campaign_id),
                              step=campaign_step)
        if ctx.policy.distills:
            distill(runtime, spec)
        get_run_logger().info("%s: %s; feasible=%s best=%s ms", task_id, summary.stop_reason, summary.feasible,
                              summary.best_ms)
        emit(ProgressEvent("task-end", campaign_id, task_id, message=summary.stop_reason))
        return asdict(summary)
    finally:
        ctx.lake.close()


def with_prefect_tasks(runtime: Runtime) -> Runtime:
    """Route the runtime's LLM calls and verifications through the retrying Prefect tasks."""
    verify_task = verify_candidate.with_options(tags={verify_tag(runtime.ctx.backend)})
    core_verify = runtime.ctx.verify
    ctx = replace(runtime.ctx,
                  generate=lambda request: llm_generate(runtime.llm, request),
                  verify=lambda spec, code: verify_task(core_verify, spec, code))
    return replace(runtime, ctx=ctx)


def _step_logger(campaign_id: str):
    logger = get_run_logger()

    def on_step(outcome: StepOutcome) -> None:
        speed = f" {outcome.candidate_ms:.3f} ms ({outcome.speedup:.2f}x)" if outcome.candidate_ms else ""
        logger.info("%s #%d stage %d: %s%s reward %+.2f", outcome.task_id, outcome.iteration, outcome.stage,
                    "feasible" if outcome.feasible else f"failed {outcome.failed_gate}", speed, outcome.reward)
        emit(ProgressEvent("step", campaign_id, outcome.task_id, outcome=outcome))
    return on_step
