"""After each task: the LLM distils experience summaries and best practices from its attempts.

The same straight line as a step: :func:`distill_request` (None when there is nothing to do), the
LLM call by the driving loop, then :func:`commit_distillation`. The distilled items join the shared
memory with their own Q values (initial q_init), so later tasks can retrieve them. Once per
(campaign, task): a resumed or rerun campaign does not distil again. That holds for a distillation
that yielded nothing too (the answer held no lesson in the expected form): it is recorded as such,
``llm_calls.items_stored = 0`` with the answer in ``llm_calls.response`` for the user to read, and
asked again only when the settings say so (``retry_empty_distillations``); otherwise every rerun of
a finished campaign (a nightly deployment under a stable id) would pay for it again.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

from evokernel.agent.context import AgentContext
from evokernel.llm.base import Completion, LLMRequest
from evokernel.prompts import AttemptSummary, build_distill_prompt, parse_distillation
from kernelbench_npu.spec import TaskSpec
from memory_lake import NewItem
from memory_lake.reads import TaskAttempt


def distill_request(ctx: AgentContext, task: TaskSpec) -> LLMRequest | None:
    """The distillation request for a finished task; None if distilled already (an empty distillation
    counts, unless ``retry_empty_distillations``) or never attempted."""
    if ctx.lake.distilled_for_task(ctx.campaign_id, task.task_id):
        return None
    if ctx.lake.distillations_recorded(ctx.campaign_id, task.task_id) and not ctx.settings.retry_empty_distillations:
        return None
    rows = ctx.lake.task_attempts(ctx.campaign_id, task.task_id)
    if not rows:
        return None
    best = {b.best_attempt_id for b in ctx.lake.best_kernels([ctx.campaign_id]) if b.task_id == task.task_id}
    prompt = build_distill_prompt(task, [_summary(row, row.attempt_id in best) for row in rows])
    return LLMRequest(system=prompt.system, prompt=prompt.user, task_id=task.task_id, stage="distill",
                      max_output_tokens=ctx.settings.llm_max_output_tokens, temperature=ctx.settings.llm_temperature)


def commit_distillation(ctx: AgentContext, task: TaskSpec, completion: Completion) -> tuple[str, ...]:
    """Store the distilled items, then record the call (its answer and how many items it stored: 0 for
    an answer with no lesson in the expected form); returns the items' ids. The call's row comes last:
    a crash between the two leaves the items, which count as distilled (a rerun asks nothing)."""
    rows = ctx.lake.task_attempts(ctx.campaign_id, task.task_id)
    last_attempt = rows[-1].attempt_id
    items = [
        NewItem(item_id=f"{d.kind}/{ctx.campaign_id}/{task.task_id}/{i}", kind=d.kind, backend=ctx.backend,
                task_id=task.task_id, category=task.category, title=d.title, body=d.body, code="",
                source_attempt_id=last_attempt, campaign_id=ctx.campaign_id)
        for i, d in enumerate(parse_distillation(completion.text))
    ]
    stored = tuple(ctx.lake.add_items(items)) if items else ()
    ctx.lake.append("llm_calls", [{
        "call_id": uuid.uuid4().hex, "campaign_id": ctx.campaign_id, "task_id": task.task_id,
        "purpose": "distill", "model": completion.model, "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens, "cost_usd": completion.cost_usd,
        "tokens_estimated": completion.tokens_estimated, "seconds": completion.seconds,
        "created_at": datetime.now(timezone.utc), "response": completion.text, "items_stored": len(items),
    }])
    return stored


def _summary(attempt: TaskAttempt, is_best: bool) -> AttemptSummary:
    passed = tuple(g["name"] for g in json.loads(attempt.gates_json or "[]") if g.get("passed"))
    return AttemptSummary(
        iteration=attempt.iteration, stage="draft" if attempt.stage == 1 else "refine",
        feasible=bool(attempt.feasible), feedback=attempt.feedback or "", code=attempt.code,
        latency_ms=attempt.candidate_ms, speedup=attempt.speedup, ci_low=attempt.ci_low, ci_high=attempt.ci_high,
        failed_gate=attempt.failed_gate, passed_gates=passed, is_best=is_best,
    )


def empty_distillation_note(task_id: str) -> str:
    """What the campaign says of a distillation that stored nothing (logged; the lake records it)."""
    return (f"{task_id}: the distillation stored no lesson (the answer held none in the expected form); its answer "
            "is in llm_calls.response (items_stored = 0); it is not asked again unless retry_empty_distillations "
            "is on (--retry-empty-distillations)")
