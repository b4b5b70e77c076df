"""Prefect tasks of a campaign: one task per benchmark task, which runs the same straight line as
the Prefect-free loop (evokernel.agent.campaign.run_task) with the LLM call and the verification
as nested Prefect tasks, so each shows up with its own state and timing.

    prepare_step -> llm-generate (task) -> verify (task) -> commit_step      per iteration
    compare (task): the first draft and the best kernel timed together       once at the end
    distill_request -> llm-generate (task) -> commit_distillation            once at the end

No Prefect-wrapped callable reaches core code, and nothing here retries: the LLM provider owns the
retry of LLM calls (evokernel.llm.retry) and evokernel.agent.verification owns the retry of
verifications that failed for infrastructure reasons (tasks/defaults.py says so once more).

Stopping (evokernel.agent.interrupt): a fatal LLM error, or a verifier that cannot run, asks the
whole campaign to stop (status ``failed``, the error's first line as reason); the nested task ends
in a Cancelled state with that line, not a traceback, and every campaign task returns at its next
check with the stop as its stop reason. After a stop no step commits.
The runtime (LLM client, lake, build) is the process's one runtime (evokernel.agent.runtime): in a
Dask worker, the worker's own. Progress is what the task commits to the lake (the CLI reads it there).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from prefect import get_run_logger, task
from prefect.states import Cancelled, Completed, State

from evokernel.agent import head_start, interrupt
from evokernel.agent.campaign import resume_task, stop_reason, summarise, verify_plan_candidate
from evokernel.agent.distill import commit_distillation, distill_request, empty_distillation_note
from evokernel.agent.gain import finish_task
from evokernel.agent.runtime import Runtime, release_runtime, runtime_for
from evokernel.agent.state import StepOutcome
from evokernel.agent.step import candidate_code, commit_step, prepare_step
from evokernel.agent.verification import verdict_outcome
from evokernel.config import Settings
from evokernel.llm.base import LLM, Completion, LLMRequest
from evokernel.llm.errors import LLMError
from kernelbench_npu.spec import TaskSpec
from tasks.defaults import CAMPAIGN_TASK, LLM_TASK, VERIFY_TASK, verify_tag
from verifier.result import Verdict


@task(name="llm-generate", task_run_name="{request.task_id} {request.stage}", **LLM_TASK)
def llm_generate(llm: LLM, request: LLMRequest, attempt_id: str | None = None) -> Completion:
    """The step's completion: the answer to this very request when the CLI sent it ahead while the
    Prefect API started (evokernel.agent.head_start), else the provider's."""
    try:
        ahead = head_start.take(attempt_id, request) if attempt_id else None
        return ahead.result() if ahead is not None else llm.complete(request)
    except LLMError as exc:  # after the provider's own retries: fatal for the campaign
        return _stop_campaign(f"{llm.spec}: {_first_line(exc)}")


@task(name="verify", task_run_name="verify {spec.task_id}", **VERIFY_TASK)
def verify_code(runtime: Runtime, spec: TaskSpec, code: str | None) -> State:
    """The verdict, in a Completed state named for what happened (Passed, Rejected, Not judged, ...:
    evokernel.agent.verification.verdict_outcome), so a failed gate is not logged as "Completed"."""
    try:
        verdict = verify_plan_candidate(runtime, spec, code)
    except interrupt.CampaignStopped as exc:
        return Cancelled(message=f"campaign stopping: {exc}")
    name, message = verdict_outcome(verdict)
    return Completed(name=name, message=message, data=verdict)


@task(name="compare", task_run_name="compare {spec.task_id}", **VERIFY_TASK)
def compare_kernels(runtime: Runtime, spec: TaskSpec, state: Any) -> dict[str, Any] | None:
    """The finished task's first draft and best kernel timed together (evokernel.agent.gain)."""
    return finish_task(runtime.ctx, spec, state, runtime.verify_settings, runtime.ctx.settings.verify_concurrency,
                       interrupt.pause)


@task(name="campaign-task", task_run_name="{task_id}", **CAMPAIGN_TASK)
def run_campaign_task(settings: dict[str, Any], campaign_id: str, task_id: str) -> State:
    """Run (or resume) one task of a campaign until its budget is spent, then distil it; its summary in
    a Completed state named Solved (a feasible kernel) or Unsolved, with the stop reason."""
    runtime = runtime_for(Settings(**settings), campaign_id)
    try:
        summary = _run_task(runtime, task_id)
        return Completed(name="Solved" if summary["feasible"] else "Unsolved", message=summary["stop_reason"][:300],
                         data=summary)
    finally:
        release_runtime(runtime)  # the last holder closes it: a long-lived Dask worker keeps no lake open


def _run_task(runtime: Runtime, task_id: str) -> dict[str, Any]:
    ctx, spec, logger = runtime.ctx, runtime.build.task(task_id), get_run_logger()
    verify = verify_code.with_options(tags={verify_tag(ctx.backend)})
    state = resume_task(ctx, spec)
    try:
        while (reason := stop_reason(ctx, state)) is None:
            plan = prepare_step(ctx, spec, state)
            completion = _result(llm_generate(runtime.llm, plan.request, plan.attempt_id, return_state=True))
            verdict = _result(verify(runtime, spec, candidate_code(ctx, completion).code, return_state=True))
            with interrupt.committing():
                outcome = commit_step(ctx, plan, completion, verdict)
            state = state.after(outcome, ctx.policy)
            _log_step(logger, outcome)
        if not interrupt.stopping():
            compare = compare_kernels.with_options(tags={verify_tag(ctx.backend)})
            _result(compare(runtime, spec, state, return_state=True))
        if not interrupt.stopping() and ctx.policy.distills and (request := distill_request(ctx, spec)) is not None:
            completion = _result(llm_generate(runtime.llm, request, return_state=True))
            with interrupt.committing():
                if not commit_distillation(ctx, spec, completion):
                    logger.warning(empty_distillation_note(task_id))
    except interrupt.CampaignStopped:
        reason = stop_reason(ctx, state) or "stopped"
    summary = summarise(state, reason)
    logger.info("%s: %s; feasible=%s best=%s ms", task_id, reason, summary.feasible, summary.best_ms)
    return asdict(summary)


def _result(state: State) -> Any:
    """A nested task's result; a task that ended the campaign (Failed, Cancelled) stops this one too."""
    if state.is_completed():
        return state.result()
    raise interrupt.CampaignStopped(state.message or "stopped")


def _stop_campaign(reason: str) -> State:
    """Ask the campaign to stop as failed (the first reason wins). This call ends Cancelled with the
    reason (a Failed one would log a traceback-less "exception" at ERROR); the flow ends Failed."""
    interrupt.request_stop(interrupt.FAILED, reason)
    return Cancelled(message=reason)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _log_step(logger, outcome: StepOutcome) -> None:
    if outcome.reward is None:  # the machine's outcome: recorded, never scored
        logger.warning("%s #%d stage %d: not judged, the machine's outcome (%s); no reward, no value update",
                       outcome.task_id, outcome.iteration, outcome.stage, outcome.machine_reason)
        return
    speed = f" {outcome.candidate_ms:.3f} ms ({outcome.speedup:.2f}x)" if outcome.candidate_ms else ""
    applied = "no value update" if outcome.reward_applied is None else f"applied {outcome.reward_applied:+.3f}"
    logger.info("%s #%d stage %d: %s%s reward %+.3f (%s)", outcome.task_id, outcome.iteration, outcome.stage,
                "feasible" if outcome.feasible else f"failed {outcome.failed_gate}", speed, outcome.reward, applied)
