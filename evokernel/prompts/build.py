"""Render the draft, refine and distill prompts from the templates in ``templates/``.

Each prompt holds the task source, the backend scaffold, the retrieved items (labelled with
their kind and value), the last verifier feedback and the answer format. Each piece of text
appears once (see :mod:`evokernel.prompts.dedup`); every section but the task source and the
system rules has a size budget (:mod:`evokernel.prompts.budget`) and long item bodies and code are
capped, the cuts stated where they happen. A built :class:`Prompt` carries its section sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from kernelbench_npu.spec import TaskSpec

from evokernel.prompts.budget import SECTION_BUDGETS, BlockSection, Fitted, SectionSize, fit_text
from evokernel.prompts.dedup import ShownTexts, repeat_of
from evokernel.prompts.lessons import measured_summary
from evokernel.prompts.shaping import compact_ok_lines, elide_unchanged, without_worked_example
from evokernel.prompts.text import cap as _cap
from evokernel.prompts.text import fenced, template
from evokernel.prompts.types import ContextItem, Prompt

MAX_ITEM_BODY = 1500
MAX_ITEM_CODE = 4000
KIND_LABELS = {"api_template": "API template", "experience": "experience",
               "trace": "generation trace", "best_practice": "best practice"}
NO_ITEMS = "(no memory items yet)"
NO_FEEDBACK = "(none: this is the first attempt)"
FEEDBACK_LABEL = "the verifier feedback on your previous attempt (below)"
_FIELD = {"reference program": "source", "backend scaffold": "scaffold", "start point": "start_point",
          "earlier refinements": "children", "retrieved memory": "context", "verifier feedback": "feedback"}


def _q(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.2f}"


@dataclass(frozen=True)
class _Rendered:
    block: str
    collapsed: bool  # a one-line reference to text shown earlier


def render_item(item: ContextItem, number: int, shown: ShownTexts) -> _Rendered:
    """An item in full, or a one-line reference when its text is already in the prompt. A failed
    trace arrives as its lesson (evokernel.agent.lessons): its body, no code."""
    kind = KIND_LABELS.get(item.kind, item.kind)
    if item.kind == "trace" and getattr(item, "feasible", None) is False:
        kind = "failed attempt: its lesson"
    head = f"### {number}. [{kind}] {item.title.strip()} (Q = {_q(item.q_value)})"
    code = item.code if item.code and item.code.strip() else None
    where = repeat_of(item.body, code, shown)
    if where == "the backend scaffold":
        return _Rendered(f"{head}: already in the backend scaffold above; not repeated.", True)
    if where:
        return _Rendered(f"{head}: same {'code' if code else 'text'} as {where}; not repeated.", True)
    body_where = shown.where(item.body)
    parts = [head]
    if item.body and item.body.strip():
        body = measured_summary(item.body) if item.kind == "trace" and getattr(item, "feasible", None) else item.body
        parts.append(f"(Same text as {body_where}; not repeated.)" if body_where
                     else _cap(compact_ok_lines(body), MAX_ITEM_BODY))
    if code:
        parts.append(_code(code, shown))
    return _Rendered("\n".join(parts), False)


def _code(code: str, shown: ShownTexts) -> str:
    """The item's code, or a diff against the closest code already shown when much shorter. Code over
    the cap that is close to code already shown loses only lines identical to it (a cut never removes
    the lines that differ); other code over the cap loses its tail."""
    closest = shown.closest_diff(code)
    if closest is not None:
        label, diff = closest
        return f"Code: {label} with these changes:\n{fenced(diff, 'diff')}"
    if len(code.strip()) > MAX_ITEM_CODE and (near := shown.nearest(code)) is not None:
        label, base = near
        return fenced(elide_unchanged(base, code, label))
    return fenced(_cap(code, MAX_ITEM_CODE))


def _item_section(name: str, items: Sequence[ContextItem], label: str, shown: ShownTexts, empty: str) -> Fitted:
    """Items rendered in order within the section's budget; what is kept is registered as shown."""
    section = BlockSection(name)
    for number, item in enumerate(items, 1):
        if section.offer((rendered := render_item(item, number, shown)).block, rendered.collapsed) \
                and not rendered.collapsed:
            shown.add_code(item.code, f"{label} {number}")
            shown.add(item.body, f"{label} {number}")
    return section.fitted(empty)


def _feedback(last_feedback: str | None) -> Fitted:
    if not last_feedback or not last_feedback.strip():
        return Fitted(NO_FEEDBACK, SectionSize("verifier feedback", len(NO_FEEDBACK), SECTION_BUDGETS["verifier feedback"]))
    return fit_text("verifier feedback", compact_ok_lines(last_feedback))


def _system(task: TaskSpec) -> str:
    return template("system").substitute(backend=task.variant, atol=f"{task.atol:g}",
                                         rtol=f"{task.rtol:g}", dtype=task.dtype).strip()


def _assemble(kind: str, task: TaskSpec, sections: dict[str, Fitted], **fields: object) -> Prompt:
    """Substitute the sections into the template; the sizes include the system prompt and, as
    "instructions", the template's own text (headings, the task line, the answer format)."""
    system = _system(task)
    values = {_FIELD[name]: fitted.text for name, fitted in sections.items()}
    user = template(kind).substitute(task_id=task.task_id, level=task.level, category=task.category,
                                     backend=task.variant, **values, **fields).strip()
    sizes = [SectionSize("system", len(system), None)] + [f.size for f in sections.values()]
    frame = len(user) - sum(f.size.chars for f in sections.values())
    return Prompt(system=system, user=user, sections=tuple(sizes) + (SectionSize("instructions", frame, None),))


def _common_sections(task: TaskSpec, scaffold: str) -> dict[str, Fitted]:
    """The task source (never cut) and the scaffold (as given: the refine prompt passes it without
    its worked example)."""
    return {"reference program": fit_text("reference program", fenced(task.source, "python")),
            "backend scaffold": fit_text("backend scaffold", scaffold.strip() or "(no scaffold for this backend)")}


def shown_before_memory(scaffold: str, last_feedback: str | None, start_point: ContextItem | None = None,
                        children: Sequence[ContextItem] = ()) -> ShownTexts:
    """What a draft (no start point) or refine prompt holds before its retrieved items: the texts a
    retrieved item must not repeat (the agent's retrieval skips an item :func:`repeat_of` finds)."""
    if start_point is None:
        shown = ShownTexts(scaffold)
        shown.add(last_feedback, FEEDBACK_LABEL)
        return shown
    shown = ShownTexts(without_worked_example(scaffold))
    shown.add_code(start_point.code, "the start point")
    shown.add(start_point.body, "the start point")
    shown.add(last_feedback, FEEDBACK_LABEL)
    for number, child in enumerate(children, 1):
        shown.add_code(child.code, f"earlier refinement {number}")
        shown.add(child.body, f"earlier refinement {number}")
    return shown


def build_draft_prompt(task: TaskSpec, scaffold: str, context: Sequence[ContextItem],
                       last_feedback: str | None) -> Prompt:
    """Drafting: task, scaffold, retrieved items, last feedback, answer format."""
    shown = shown_before_memory(scaffold, last_feedback)
    sections = _common_sections(task, scaffold)
    sections["retrieved memory"] = _item_section("retrieved memory", context, "memory item", shown, NO_ITEMS)
    sections["verifier feedback"] = _feedback(last_feedback)
    return _assemble("draft", task, sections, n_items=len(context))


def _start_point(start_point: ContextItem, shown: ShownTexts) -> Fitted:
    parts = [f"**{start_point.title.strip()}**", _cap(compact_ok_lines(start_point.body or ""), MAX_ITEM_BODY),
             fenced(start_point.code or "(no code)", "python")]
    shown.add_code(start_point.code, "the start point")
    shown.add(start_point.body, "the start point")
    return fit_text("start point", "\n".join(p for p in parts if p))


def build_refine_prompt(task: TaskSpec, scaffold: str, start_point: ContextItem,
                        children: Sequence[ContextItem], context: Sequence[ContextItem],
                        best_ms: float | None, last_feedback: str | None,
                        best_speedup: float | None = None) -> Prompt:
    """Refining: the start point's code and result, its children, retrieved items, the best so far.

    The target is the best kernel's *paired* speedup (timed side by side with the reference in its
    own verification) when there is one: raw latencies of two verifications differ with the machine's
    load, so "beat 5.3 ms" could be unreachable or trivial for an identical kernel."""
    best_line = _best_line(best_ms, best_speedup)
    scaffold = without_worked_example(scaffold)  # the start point is a complete kernel for this very task
    shown = ShownTexts(scaffold)
    sections = _common_sections(task, scaffold)
    sections["start point"] = _start_point(start_point, shown)
    shown.add(last_feedback, FEEDBACK_LABEL)
    sections["earlier refinements"] = _item_section("earlier refinements", children, "earlier refinement", shown,
                                                    "(none yet: you are the first refinement of this start point)")
    sections["retrieved memory"] = _item_section("retrieved memory", context, "memory item", shown, NO_ITEMS)
    sections["verifier feedback"] = _feedback(last_feedback)
    return _assemble("refine", task, sections, best_line=best_line, start_q=_q(start_point.q_value),
                     n_children=len(children), n_items=len(context))


def _best_line(best_ms: float | None, best_speedup: float | None) -> str:
    if best_speedup is not None:
        during = f" ({best_ms:.4g} ms in that run)" if best_ms is not None else ""
        return (f"The best correct kernel so far runs {best_speedup:.3g}x as fast as the reference: the median over "
                f"rounds of reference time / its time, both timed in each round{during}; beat that speedup.")
    if best_ms is not None:
        return f"The best correct kernel so far runs in {best_ms:.4g} ms; beat it."
    return "No latency has been measured yet."
