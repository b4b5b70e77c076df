"""Failed traces as their lessons: the agent reads what a failed kernel teaches from the lake (its
gate, feedback and code, and the first later attempt of its task that passed that gate) and shows
that instead of the kernel (evokernel.prompts.lessons writes the text). Kernels that worked keep
their code."""

from __future__ import annotations

from dataclasses import replace

from evokernel.prompts.lessons import failure_lesson
from memory_lake import Lake, RetrievedItem


def is_failed_trace(item: RetrievedItem) -> bool:
    return item.kind == "trace" and item.feasible is False


def as_lessons(lake: Lake, items: tuple[RetrievedItem, ...]) -> tuple[RetrievedItem, ...]:
    """The items with every failed trace's code replaced by its lesson (its title kept)."""
    return tuple(_lesson(lake, item) if is_failed_trace(item) else item for item in items)


def _lesson(lake: Lake, item: RetrievedItem) -> RetrievedItem:
    facts = lake.failure_and_fix(item.source_attempt_id) if item.source_attempt_id else None
    if facts is None:
        text = failure_lesson(None, item.body, item.code)
    else:
        text = failure_lesson(facts.failed_gate, facts.feedback, facts.code, facts.fix_iteration, facts.fix_code)
    return replace(item, body=text, code="")
