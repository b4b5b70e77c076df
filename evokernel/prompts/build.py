"""Render the draft, refine and distill prompts from the templates in ``templates/``.

Each prompt holds the task source, the backend scaffold, the retrieved items (labelled with
their kind and value), the last verifier feedback and the answer format. Each piece of text
appears once (see :mod:`evokernel.prompts.dedup`); every section but the task source and the
system rules has a size budget (:mod:`evokernel.prompts.budget`) and long item bodies and code are
capped, the cuts stated where they happen. A built :class:`Prompt` carries its section sizes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from string import Template
from typing import Sequence

from kernelbench_npu.spec import TaskSpec

from evokernel.prompts.budget import SECTION_BUDGETS, BlockSection, Fitted, SectionSize, fit_text
from evokernel.prompts.dedup import ShownTexts, repeat_of
from evokernel.prompts.shaping import compact_ok_lines, without_worked_example
from evokernel.prompts.types import AttemptSummary, ContextItem, Prompt

MAX_ITEM_BODY = 1500
MAX_ITEM_CODE = 4000
MAX_DISTILL_FEEDBACK = 400
MAX_DISTILL_CODE = 3000
KIND_LABELS = {"api_template": "API template", "experience": "experience",
               "trace": "generation trace", "best_practice": "best practice"}
NO_ITEMS = "(no memory items yet)"
NO_FEEDBACK = "(none: this is the first attempt)"
FEEDBACK_LABEL = "the verifier feedback on your previous attempt (below)"
_FIELD = {"reference program": "source", "backend scaffold": "scaffold", "start point": "start_point",
          "earlier refinements": "children", "retrieved memory": "context", "verifier feedback": "feedback"}


@lru_cache(maxsize=None)
def template(name: str) -> Template:
    return Template(files("evokernel.prompts").joinpath("templates", f"{name}.md").read_text())


def _cap(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f"\n… [{len(text) - limit} more characters cut]"


def fenced(code: str, language: str = "") -> str:
    """A Markdown fence longer than any backtick run inside ``code``."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _q(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.2f}"


@dataclass(frozen=True)
class _Rendered:
    block: str
    collapsed: bool  # a one-line reference to text shown earlier


def render_item(item: ContextItem, number: int, shown: ShownTexts) -> _Rendered:
    """An item in full, or a one-line reference when its text is already in the prompt."""
    kind = KIND_LABELS.get(item.kind, item.kind)
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
        parts.append(f"(Same text as {body_where}; not repeated.)" if body_where
                     else _cap(compact_ok_lines(item.body), MAX_ITEM_BODY))
    if code:
        parts.append(_code(code, shown))
    return _Rendered("\n".join(parts), False)


def _code(code: str, shown: ShownTexts) -> str:
    """The item's code, or a diff against the closest code already shown when much shorter."""
    closest = shown.closest_diff(code)
    if closest is None:
        return fenced(_cap(code, MAX_ITEM_CODE))
    label, diff = closest
    return f"Code: {label} with these changes:\n{fenced(diff, 'diff')}"


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
        return (f"The best correct kernel so far runs {best_speedup:.3g}x as fast as the reference, timed side "
                f"by side with it{during}; beat that speedup.")
    if best_ms is not None:
        return f"The best correct kernel so far runs in {best_ms:.4g} ms; beat it."
    return "No latency has been measured yet."


def _render_attempt(attempt: AttemptSummary, show_code: bool) -> str:
    result = "feasible" if attempt.feasible else "failed"
    if attempt.latency_ms is not None:
        result += f", {attempt.latency_ms:.4g} ms"
    if attempt.speedup is not None:
        result += f", speedup {attempt.speedup:.3g}x over the reference"
    lines = [f"- #{attempt.iteration} {attempt.stage}: {result}. "
             f"Feedback: {' '.join(_cap(attempt.feedback or '-', MAX_DISTILL_FEEDBACK).split())}"]
    if show_code and attempt.code:
        lines.append(fenced(_cap(attempt.code, MAX_DISTILL_CODE), "python"))
    return "\n".join(lines)


def _best_and_first_failure(attempts: Sequence[AttemptSummary]) -> set[int]:
    """Indices whose code is shown: the fastest feasible attempt and the first failure."""
    shown = set()
    feasible = [i for i, a in enumerate(attempts) if a.feasible]
    if feasible:
        shown.add(min(feasible, key=lambda i: attempts[i].latency_ms if attempts[i].latency_ms is not None
                      else math.inf))
    failed = [i for i, a in enumerate(attempts) if not a.feasible and a.code]
    if failed:
        shown.add(failed[0])
    return shown


def build_distill_prompt(task: TaskSpec, attempts: Sequence[AttemptSummary]) -> Prompt:
    """Distillation: every attempt's result and feedback; code of the best and the first failure."""
    n_feasible = sum(a.feasible for a in attempts)
    speedups = [a.speedup for a in attempts if a.feasible and a.speedup is not None]
    summary = f"{len(attempts)} attempts, {n_feasible} feasible"
    summary += f", best speedup {max(speedups):.3g}x." if speedups else "."
    shown = _best_and_first_failure(attempts)
    rendered = "\n".join(_render_attempt(a, i in shown) for i, a in enumerate(attempts)) or "(no attempts)"
    user = template("distill").substitute(
        task_id=task.task_id, level=task.level, category=task.category, backend=task.variant,
        summary_line=summary, attempts=rendered,
    )
    return Prompt(system=template("distill_system").template.strip(), user=user.strip())
