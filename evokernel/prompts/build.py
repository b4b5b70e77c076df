"""Render the draft, refine and distill prompts from the templates in ``templates/``.

Each prompt holds the task source, the backend scaffold, the retrieved items (labelled with
their kind and value), the last verifier feedback and the answer format. Long item bodies,
code and feedback are capped so a prompt stays concise; the task source is never cut.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib.resources import files
from string import Template
from typing import Sequence

from kernelbench_npu.spec import TaskSpec

from evokernel.prompts.types import AttemptSummary, ContextItem, Prompt

MAX_ITEM_BODY = 1500
MAX_ITEM_CODE = 4000
MAX_FEEDBACK = 2000
MAX_DISTILL_FEEDBACK = 400
MAX_DISTILL_CODE = 3000
KIND_LABELS = {"api_template": "API template", "experience": "experience",
               "trace": "generation trace", "best_practice": "best practice"}


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


def render_item(item: ContextItem, number: int) -> str:
    kind = KIND_LABELS.get(item.kind, item.kind)
    parts = [f"### {number}. [{kind}] {item.title.strip()} (Q = {_q(item.q_value)})"]
    if item.body and item.body.strip():
        parts.append(_cap(item.body, MAX_ITEM_BODY))
    if item.code and item.code.strip():
        parts.append(fenced(_cap(item.code, MAX_ITEM_CODE)))
    return "\n".join(parts)


def render_items(items: Sequence[ContextItem], empty: str) -> str:
    return "\n\n".join(render_item(item, i) for i, item in enumerate(items, 1)) if items else empty


def _feedback(last_feedback: str | None) -> str:
    if not last_feedback or not last_feedback.strip():
        return "(none: this is the first attempt)"
    return _cap(last_feedback, MAX_FEEDBACK)


def _task_fields(task: TaskSpec, scaffold: str) -> dict[str, object]:
    return {
        "task_id": task.task_id, "level": task.level, "category": task.category,
        "backend": task.variant, "source": fenced(task.source, "python"),
        "scaffold": scaffold.strip() or "(no scaffold for this backend)",
    }


def _system(task: TaskSpec) -> str:
    return template("system").substitute(backend=task.variant, atol=f"{task.atol:g}",
                                         rtol=f"{task.rtol:g}", dtype=task.dtype).strip()


def build_draft_prompt(task: TaskSpec, scaffold: str, context: Sequence[ContextItem],
                       last_feedback: str | None) -> Prompt:
    """Drafting: task, scaffold, retrieved items, last feedback, answer format."""
    user = template("draft").substitute(
        **_task_fields(task, scaffold), n_items=len(context),
        context=render_items(context, "(no memory items yet)"), feedback=_feedback(last_feedback),
    )
    return Prompt(system=_system(task), user=user.strip())


def build_refine_prompt(task: TaskSpec, scaffold: str, start_point: ContextItem,
                        children: Sequence[ContextItem], context: Sequence[ContextItem],
                        best_ms: float | None, last_feedback: str | None) -> Prompt:
    """Refining: the start point's code and result, its children, retrieved items, the best so far."""
    best_line = (f"The best correct kernel so far runs in {best_ms:.4g} ms; beat it."
                 if best_ms is not None else "No latency has been measured yet.")
    start = "\n".join(p for p in (f"**{start_point.title.strip()}**", _cap(start_point.body or "", MAX_ITEM_BODY),
                                  fenced(start_point.code or "(no code)", "python")) if p)
    user = template("refine").substitute(
        **_task_fields(task, scaffold), best_line=best_line, start_q=_q(start_point.q_value),
        start_point=start, n_children=len(children),
        children=render_items(children, "(none yet: you are the first refinement of this start point)"),
        n_items=len(context), context=render_items(context, "(no memory items yet)"),
        feedback=_feedback(last_feedback),
    )
    return Prompt(system=_system(task), user=user.strip())


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
