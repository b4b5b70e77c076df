"""One iteration of a task as a straight line: prepare -> generate -> verify -> commit.

:func:`prepare_step` chooses the start point, retrieves the context and builds the LLM request
(a :class:`StepPlan`); the driving loop then calls the LLM, extracts the candidate
(:func:`candidate_code`) and verifies it; :func:`commit_step` scores the verdict and writes the
attempt. The loops that drive it are evokernel.agent.campaign (no Prefect) and tasks/campaign.py
(the same line with the LLM call and the verification as Prefect tasks).

Order of writes (the crash-safety argument): retrievals are recorded when retrieved; the attempt
row is then appended as the step's commit marker; value updates and the trace item are derived
from it afterwards by :func:`complete_attempt`, which is idempotent. A campaign killed anywhere
re-runs an uncommitted step under the same attempt id (reusing its recorded retrievals) and
completes a committed step's missing side effects, so no attempt is duplicated or lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from evokernel.agent import rewards
from evokernel.agent.attribution import CANDIDATE, MACHINE, attribute_gates, gates_from_json, owner_of
from evokernel.agent.context import AgentContext, attempt_id_for, trace_item_id_for
from evokernel.agent.records import attempt_row, timing_class, trace_item
from evokernel.agent.scoring import Scored, score
from evokernel.agent.retrieval import children_of, choose_start_point, gather_context, start_item
from evokernel.agent.state import StartPoint, StepOutcome, TaskState
from evokernel.llm.base import Completion, LLMRequest
from evokernel.prompts import (CodeExtraction, Prompt, SectionSize, build_draft_prompt, build_refine_prompt,
                               extract_code, shown_before_memory)
from kernelbench_npu.spec import TaskSpec
from memory_lake import RetrievedItem, ValueUpdate
from verifier.result import Verdict


@dataclass(frozen=True)
class StepPlan:
    """Everything one iteration decided before the LLM is called."""

    task: TaskSpec
    attempt_id: str
    iteration: int
    stage: int  # 1 drafting, 2 refining
    start: StartPoint | None  # refining only
    context: tuple[RetrievedItem, ...]
    request: LLMRequest
    incumbent: rewards.PairedSpeedup | None  # the task's best paired speedup before this step
    refine_stats: rewards.RunningStats  # the refining-reward normaliser before this step
    prompt_sections: tuple[SectionSize, ...] = ()  # the size of each section of the request's prompt


def prepare_step(ctx: AgentContext, task: TaskSpec, state: TaskState, record: bool = True) -> StepPlan:
    """Choose, retrieve and build the request; ``record=False`` (``evokernel prompt``) writes nothing."""
    iteration = state.iterations_done
    attempt_id = attempt_id_for(ctx.campaign_id, task.task_id, iteration)
    stage = state.stage(ctx.policy)
    start = choose_start_point(ctx, state, attempt_id) if stage == 2 else None
    children = children_of(ctx, start) if start else ()
    shown = (start.item_id, *(c.item_id for c in children)) if start else ()
    texts = shown_before_memory(ctx.scaffold, state.last_feedback,
                                start_item(ctx, start, task.task_id) if start else None, children)
    context = gather_context(ctx, task, stage, attempt_id, record, shown, texts)
    prompt = _prompt(ctx, task, stage, start, children, context, state)
    return StepPlan(task=task, attempt_id=attempt_id, iteration=iteration, stage=stage, start=start,
                    context=context, request=_request(ctx, task, stage, prompt, state),
                    incumbent=state.best, refine_stats=state.refine_stats, prompt_sections=prompt.sections)


def candidate_code(ctx: AgentContext, completion: Completion) -> CodeExtraction:
    """The kernel in the answer, or the one-line problem that replaces a verification."""
    return extract_code(completion.text, ctx.fence_language, completion.finish_reason)


def commit_step(ctx: AgentContext, plan: StepPlan, completion: Completion, verdict: Verdict | None) -> StepOutcome:
    """Score the verdict (None: no usable kernel in the answer) and write the attempt."""
    extraction = candidate_code(ctx, completion)
    scored = score(plan.stage, verdict, plan.incumbent, plan.refine_stats, ctx.policy.learns_values)
    row = attempt_row(
        attempt_id=plan.attempt_id, campaign_id=ctx.campaign_id, task=plan.task, stage=plan.stage,
        iteration=plan.iteration, method=ctx.policy.name, model=ctx.model, backend=ctx.backend,
        start_point_item_id=plan.start.item_id if plan.start else None, code=extraction.code, verdict=verdict,
        feedback=_feedback(verdict, extraction.problem, scored), completion=completion, scored=scored,
        verify_seconds=verdict.seconds if verdict else 0.0,
    )
    ctx.lake.append("attempts", [row])
    return outcome_from_row(row, complete_attempt(ctx, plan.task, row))


def _prompt(ctx: AgentContext, task: TaskSpec, stage: int, start: StartPoint | None,
            children: tuple[RetrievedItem, ...], context: tuple[RetrievedItem, ...], state: TaskState) -> Prompt:
    if stage == 1:
        return build_draft_prompt(task, ctx.scaffold, context, state.last_feedback)
    return build_refine_prompt(task, ctx.scaffold, start_item(ctx, start, task.task_id), children,
                               context, state.best_ms, state.last_feedback,
                               best_speedup=state.best.speedup if state.best else None)


def _request(ctx: AgentContext, task: TaskSpec, stage: int, prompt: Prompt, state: TaskState) -> LLMRequest:
    # call_index: the position of this call among the task's calls of its stage, so a scripted
    # provider replays deterministically after a resume (drafts come first, then refinements).
    first_refine = (state.first_feasible_iteration or 0) + 1
    call_index = state.iterations_done if stage == 1 else state.iterations_done - first_refine
    return LLMRequest(system=prompt.system, prompt=prompt.user, task_id=task.task_id,
                      stage="draft" if stage == 1 else "refine",
                      max_output_tokens=ctx.settings.llm_max_output_tokens,
                      temperature=ctx.settings.llm_temperature, metadata={"call_index": call_index})


def _feedback(verdict: Verdict | None, problem: str | None, scored: Scored) -> str:
    """What the next prompt is told: the verifier's feedback, or for the machine's outcome that the
    kernel was not judged (never that it failed)."""
    if verdict is None:
        return f"no usable kernel: {problem}"
    if scored.owner == MACHINE:
        return (f"NOT JUDGED: this machine could not verify your kernel ({scored.machine_reason}). It was neither "
                "accepted nor rejected; this is not a verdict on your code.")
    return verdict.feedback


def complete_attempt(ctx: AgentContext, task: TaskSpec, row: dict) -> str | None:
    """Idempotently write what a committed attempt implies: its trace item and its Q updates.
    The machine's outcomes imply neither: their code was never judged."""
    if owner_of(row) != CANDIDATE:
        return None
    trace_id = None
    if row["code"]:
        trace_id = trace_item_id_for(row["attempt_id"])
        if not ctx.lake.item_exists(trace_id):
            ctx.lake.add_items([trace_item(trace_id, row, task)])
    if ctx.policy.learns_values:
        _apply_value_updates(ctx, row)
    return trace_id


def applied_reward(row: dict) -> float | None:
    """The reward a committed attempt's value updates use: ``reward_applied``; for rows written before
    that column, ``reward_normalized`` (what was applied then)."""
    if row.get("outcome_owner") is None and row.get("reward_applied") is None:
        return row.get("reward_normalized")
    return row.get("reward_applied")


def _apply_value_updates(ctx: AgentContext, row: dict) -> None:
    """Q1 for every retrieved item (drafting); Q2 for the start point and retrieved items (refining).
    An item's first update of a stage starts from the Q it was chosen with (its prior, recorded with
    the retrieval: ``q1_init``, or ``q1_init_related`` for an item of the task or its category)."""
    stage, attempt_id, reward = int(row["stage"]), row["attempt_id"], applied_reward(row)
    if reward is None:
        return
    done = ctx.lake.updates_for_attempt(attempt_id)
    chosen_with = {item.item_id: item.q_value for item in ctx.lake.retrieved_for_attempt(attempt_id)}
    targets = list(chosen_with) + ([row["start_point_item_id"]] if stage == 2 and row["start_point_item_id"] else [])
    updates = [
        ValueUpdate(item_id=item_id, stage=stage, reward=reward, alpha=ctx.settings.alpha,
                    attempt_id=attempt_id, campaign_id=row["campaign_id"],
                    prior=chosen_with.get(item_id, ctx.settings.q1_init) if stage == 1 else None)
        for item_id in dict.fromkeys(targets) if (item_id, stage) not in done
    ]
    if updates:
        ctx.lake.update_values(updates)


def outcome_from_row(row: dict, trace_item_id: str | None) -> StepOutcome:
    stage = int(row["stage"])
    who = attribute_gates(gates_from_json(row.get("gates_json")), stage)
    return StepOutcome(
        attempt_id=row["attempt_id"], task_id=row["task_id"], iteration=int(row["iteration"]),
        owner=owner_of(row), latency_unmeasurable=who.latency_unmeasurable, latency_untrusted=who.latency_untrusted,
        machine_reason=row.get("machine_reason") or "", reward_applied=applied_reward(row),
        stage=stage, feasible=bool(row["feasible"]), failed_gate=row["failed_gate"],
        candidate_ms=row["candidate_ms"], speedup=row["speedup"], reward=row["reward"],
        reward_normalized=row["reward_normalized"], feedback=row["feedback"] or "",
        trace_item_id=trace_item_id, code=row["code"], ci_low=row.get("ci_low"), ci_high=row.get("ci_high"),
        timing_flag=row.get("timing_flag") or (timing_class(row.get("flagged"), row.get("feedback"))
                                               if row.get("speedup") is not None else None),
        tokens=int(row.get("tokens") or (row.get("input_tokens") or 0) + (row.get("output_tokens") or 0)),
        seconds=float(row.get("seconds") or (row.get("llm_seconds") or 0.0) + (row.get("verify_seconds") or 0.0)),
    )
