"""The distillation prompt of a finished task: every attempt with its result, the task's best kernel
in full (the best by the one definition the campaign log, the lake and the report share: the caller
marks it), the first feasible draft as a diff against it, and each failure as its lesson (gate, error,
the line it points at, what fixed it), not its code."""

from __future__ import annotations

from typing import Sequence

from kernelbench_npu.spec import TaskSpec

from evokernel.prompts.lessons import failure_lesson
from evokernel.prompts.shaping import code_diff
from evokernel.prompts.text import cap, fenced, template
from evokernel.prompts.types import AttemptSummary, Prompt

MAX_DISTILL_FEEDBACK = 400
MAX_DISTILL_CODE = 6000


def _result(attempt: AttemptSummary) -> str:
    if not attempt.feasible:
        return f"failed at the {attempt.failed_gate or 'generation'} gate"
    text = "feasible"
    if attempt.speedup is not None:
        interval = f", 95% CI {attempt.ci_low:.3g}-{attempt.ci_high:.3g}" if attempt.ci_low and attempt.ci_high else ""
        text += f", {attempt.speedup:.3g}x the reference's speed (median over rounds{interval})"
    if attempt.latency_ms is not None:
        text += f", {attempt.latency_ms:.4g} ms"
    return text + (" — the best kernel" if attempt.is_best else "")


def _fix_of(attempts: Sequence[AttemptSummary], index: int) -> tuple[int | None, str | None]:
    """The first later attempt that passed the gate attempt ``index`` failed."""
    gate = attempts[index].failed_gate
    for later in attempts[index + 1:]:
        if gate and gate in later.passed_gates and later.code:
            return later.iteration, later.code
    return None, None


def _render(attempts: Sequence[AttemptSummary], index: int) -> str:
    attempt = attempts[index]
    head = f"- #{attempt.iteration} {attempt.stage}: {_result(attempt)}."
    if attempt.feasible:
        return f"{head} Feedback: {' '.join(cap(attempt.feedback or '-', MAX_DISTILL_FEEDBACK).split())}"
    lesson = failure_lesson(attempt.failed_gate, attempt.feedback, attempt.code, *_fix_of(attempts, index)).splitlines()
    return f"- #{attempt.iteration} {attempt.stage}: {lesson[0]}\n" + "\n".join("  " + line for line in lesson[1:])


def _kernels(attempts: Sequence[AttemptSummary]) -> str:
    """The best kernel's code, then the first feasible draft as a diff against it (or in full)."""
    best = next((a for a in attempts if a.is_best), None) or next((a for a in attempts if a.feasible), None)
    if best is None or not best.code:
        return "(no feasible kernel)"
    parts = [f"### The best kernel (#{best.iteration})", fenced(cap(best.code, MAX_DISTILL_CODE), "python")]
    draft = next((a for a in attempts if a.feasible and a.stage == "draft"), None)
    if draft is not None and draft is not best and draft.code:
        diff = code_diff(draft.code, best.code, share=1.0)
        parts.append(f"### The first feasible draft (#{draft.iteration}), as the changes that made it the best kernel")
        parts.append(fenced(diff, "diff") if diff else fenced(cap(draft.code, MAX_DISTILL_CODE), "python"))
    return "\n".join(parts)


def build_distill_prompt(task: TaskSpec, attempts: Sequence[AttemptSummary]) -> Prompt:
    """Distillation: every attempt's result (failures as lessons), the best kernel and the first draft."""
    n_feasible = sum(a.feasible for a in attempts)
    best = next((a for a in attempts if a.is_best and a.speedup is not None), None)
    summary = f"{len(attempts)} attempts, {n_feasible} feasible"
    summary += f"; the best kernel (#{best.iteration}) runs {best.speedup:.3g}x the reference's speed." if best else "."
    rendered = "\n".join(_render(attempts, i) for i in range(len(attempts))) or "(no attempts)"
    user = template("distill").substitute(
        task_id=task.task_id, level=task.level, category=task.category, backend=task.variant,
        summary_line=summary, attempts=rendered, kernels=_kernels(attempts),
    )
    return Prompt(system=template("distill_system").template.strip(), user=user.strip())
