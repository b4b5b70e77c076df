"""After each task: the LLM distils experience summaries and best practices from its attempts.

The distilled items join the shared memory with their own Q values (initial q_init), so later tasks
can retrieve them. Idempotent per (campaign, task): a resumed campaign does not distil twice.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from evokernel.agent.context import AgentContext
from evokernel.agent.retrieval import sql
from evokernel.llm.base import LLM, LLMRequest
from evokernel.prompts import AttemptSummary, build_distill_prompt, parse_distillation
from kernelbench_npu.spec import TaskSpec
from memory_lake import NewItem


def distill_task(ctx: AgentContext, llm: LLM, task: TaskSpec) -> tuple[str, ...]:
    """Distil the task's attempts into memory items; returns their ids (existing ones if done)."""
    params = {"campaign_id": ctx.campaign_id, "task_id": task.task_id}
    existing = ctx.lake.query(sql("distilled_for_task"), params).to_pylist()
    if existing:
        return tuple(row["item_id"] for row in existing)
    rows = ctx.lake.query(sql("task_attempts"), params).to_pylist()
    if not rows:
        return ()
    prompt = build_distill_prompt(task, [_summary(row) for row in rows])
    completion = llm.complete(LLMRequest(system=prompt.system, prompt=prompt.user, task_id=task.task_id,
                                         stage="distill", max_output_tokens=ctx.settings.llm_max_output_tokens,
                                         temperature=ctx.settings.llm_temperature))
    ctx.lake.append("llm_calls", [{
        "call_id": uuid.uuid4().hex, "campaign_id": ctx.campaign_id, "task_id": task.task_id,
        "purpose": "distill", "model": completion.model, "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens, "cost_usd": completion.cost_usd,
        "seconds": completion.seconds, "created_at": datetime.now(timezone.utc),
    }])
    last_attempt = rows[-1]["attempt_id"]
    items = [
        NewItem(item_id=f"{d.kind}/{ctx.campaign_id}/{task.task_id}/{i}", kind=d.kind, backend=ctx.backend,
                task_id=task.task_id, category=task.category, title=d.title, body=d.body, code="",
                source_attempt_id=last_attempt, campaign_id=ctx.campaign_id)
        for i, d in enumerate(parse_distillation(completion.text))
    ]
    return tuple(ctx.lake.add_items(items)) if items else ()


def _summary(row: dict) -> AttemptSummary:
    return AttemptSummary(
        iteration=int(row["iteration"]), stage="draft" if int(row["stage"]) == 1 else "refine",
        feasible=bool(row["feasible"]), feedback=row["feedback"] or "", code=row["code"],
        latency_ms=row["candidate_ms"], speedup=row["speedup"],
    )
