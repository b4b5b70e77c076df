"""Prefect tasks of the campaign flow: one per (task, iteration) step, with the LLM call and the
verification as nested tasks so each gets its own retry rule."""

from __future__ import annotations

from prefect import task

from evokernel.agent.context import AgentContext, VerifierInfrastructureError
from evokernel.agent.distill import distill_task
from evokernel.agent.rewards import RunningStats
from evokernel.agent.state import TaskState
from evokernel.agent.runtime import Runtime
from evokernel.agent.step import StepResult, run_step
from evokernel.llm.base import LLM, Completion, LLMRequest
from evokernel.llm.errors import LLMError
from kernelbench_npu.spec import TaskSpec
from tasks.defaults import DISTILL_TASK, LLM_TASK, STEP_TASK, VERIFY_TASK, verify_tag
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


def verify_tags(backend: str) -> set[str]:
    return {verify_tag(backend)}


@task(name="distill", task_run_name="distill {spec.task_id}", retry_condition_fn=retry_llm_error, **DISTILL_TASK)
def distill(runtime: Runtime, spec: TaskSpec) -> tuple[str, ...]:
    """Experience summaries and best practices from a finished task (skipped if already done)."""
    return distill_task(runtime.ctx, runtime.llm, spec)
