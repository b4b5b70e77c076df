"""Planning a build: find and load the problems, size each for the variant, compute the build hash.

Everything here is deterministic (no timing): the same sources, variant, levels and builder version
give the same plan, the same adapted files and the same hash. Sizing runs on the meta device
(:mod:`kernelbench_npu.sizing`) in the lint worker pool, once per problem (the sizes do not depend on
the dtype, so every dtype of a problem shares one problem file). Each task also gets the sizes it
is linted at and how (:mod:`kernelbench_npu.variants`). Lint (which measures) comes after.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kernelbench_npu.lint import LintRequest, WorkerPool, run_requests
from kernelbench_npu.loader import Problem, ProblemError, load_problem, problem_files
from kernelbench_npu.sizing import SizeFit, fit_from_dict
from kernelbench_npu.variants import (CPU_2CORE, LINT_META, LINT_REDUCED, LINT_TASK_SIZES, Variant, alignment_note,
                                      short_dtype)

BUILDER_VERSION = "2.1"
BUNDLED_DIR = Path(__file__).resolve().parent / "problems"
MiB = 1 << 20
ADAPT_TIMEOUT_S = 300.0  # sizing one file: well under a second for most, ~30 s for a Swin on a quiet machine


@dataclass(frozen=True)
class SourceDir:
    label: str  # "bundled", or the directory as given
    path: Path
    id_prefix: str  # "" for bundled, "KB-" for the first user checkout, "KB2-" for the second...


@dataclass(frozen=True)
class PlannedTask:
    task_id: str
    problem: Problem
    dtype: str
    fit: SizeFit | None  # the task's sizes (None: the file could not be sized)
    lint_fit: SizeFit | None  # the sizes it is linted at
    lint_mode: str  # LINT_TASK_SIZES | LINT_REDUCED | LINT_META
    plan_reason: str | None  # set: quarantined before lint (no meta run, too slow for the profile)
    notes: str
    problem_file: str  # relative to BUILD/problems/
    specs: dict | None = None  # shape-only inputs at the task's sizes (kernelbench_npu.shape_specs; NPU variants)

    @property
    def adapted_source(self) -> str:
        return self.fit.source if self.fit else self.problem.source

    @property
    def linted(self) -> bool:
        """True when the reference runs in a lint worker (planned fine, not meta-only)."""
        return self.plan_reason is None and self.lint_mode != LINT_META


@dataclass(frozen=True)
class BuildPlan:
    variant: Variant
    levels: tuple[int, ...]
    sources: tuple[SourceDir, ...]
    tasks: tuple[PlannedTask, ...]
    load_errors: tuple[str, ...]  # one line each, paths relative to their source
    build_hash: str


def source_dirs(sources: Sequence[Path | str], include_bundled: bool) -> tuple[SourceDir, ...]:
    dirs = [SourceDir("bundled", BUNDLED_DIR, "")] if include_bundled else []
    for i, path in enumerate(sources):
        dirs.append(SourceDir(str(path), Path(path), "KB-" if i == 0 else f"KB{i + 1}-"))
    return tuple(dirs)


def plan_build(variant: Variant, sources: Sequence[Path | str] = (), levels: Sequence[int] = (1, 2, 3),
               include_bundled: bool = True, workers: int = 2, threads: int = 1,
               timeout_s: float = ADAPT_TIMEOUT_S, progress: Callable[[str], None] | None = None,
               pool: WorkerPool | None = None) -> BuildPlan:
    """Load, adapt and hash. Raises ProblemError when a source directory does not exist. ``pool`` keeps
    the sizing's worker processes for the lint that follows (kernelbench_npu.lint.WorkerPool).

    Files are parsed here; executing them (the meta-device checks and the size profile) happens in
    worker processes with a timeout, so a file that hangs or crashes is quarantined, not fatal."""
    levels = tuple(sorted(set(int(x) for x in levels)))
    dirs = source_dirs(sources, include_bundled)
    problems, errors = [], []
    for src in dirs:
        for path, level in problem_files(src.path, levels):
            try:
                problem = load_problem(path, level=level, id_prefix=src.id_prefix, run=False)
            except ProblemError as exc:
                errors.append(_relative_error(src, path, str(exc)))
                continue
            if problem.level in levels:
                problems.append((src, problem))
    _reject_duplicates([p for _, p in problems])
    adapted = _adapt_all([p for _, p in problems], variant, workers, threads, timeout_s, progress, pool)
    tasks = []
    for src, problem in problems:
        answer = adapted.get(problem.task_id, {})
        if "load_error" in answer:
            errors.append(_relative_error(src, problem.path, answer["load_error"]))
            continue
        tasks += _plan_task(problem, variant, answer)
    return BuildPlan(variant, levels, dirs, tuple(tasks), tuple(errors), build_hash(variant, dirs, levels))


def build_hash(variant: Variant, dirs: Sequence[SourceDir], levels: tuple[int, ...]) -> str:
    """sha256 over the builder version, the variant, the levels and every scanned file (id prefix,
    path relative to its source, sha256 of its bytes); cheap: no file is executed."""
    digests = [(src.id_prefix, path.relative_to(src.path).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest())
               for src in dirs for path, _level in problem_files(src.path, levels)]
    payload = {"builder_version": BUILDER_VERSION, "variant": variant.as_dict(), "levels": list(levels),
               "sources": sorted(digests)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _relative_error(src: SourceDir, path: Path, error: str) -> str:
    rel = path.relative_to(src.path).as_posix()
    return f"{src.label}/{rel}: {error.removeprefix(str(path) + ': ')}"


def _adapt_all(problems: list[Problem], variant: Variant, workers: int, threads: int, timeout_s: float,
               progress: Callable[[str], None] | None, pool: WorkerPool | None = None) -> dict[str, dict]:
    """Size every problem once (fp32, meta device) in the worker pool; answers keyed by task id."""
    requests = [LintRequest(p.task_id, p.source, "float32", str(p.path), kind="adapt", shrink=variant.shrinks,
                            lint_profile=variant.lint_sizes, specs=variant.records_by_shape) for p in problems]

    def report(request: LintRequest, answer: dict) -> None:
        if progress:
            done = answer.get("task", {}).get("note") or answer.get("cost_error") or answer.get("load_error") \
                or answer.get("failure") or answer.get("error")
            progress(f"sized {request.key}: {str(done).splitlines()[0][:160]}")

    return run_requests(requests, timeout_s, workers=workers, threads=threads, memory_bytes=4 << 30, on_answer=report,
                        pool=pool)


def _reject_duplicates(problems: list[Problem]) -> None:
    seen: dict[str, Path] = {}
    for p in problems:
        if p.task_id in seen:
            raise ProblemError(f"{p.path}: task id {p.task_id!r} already used by {seen[p.task_id]}")
        seen[p.task_id] = p.path


def _plan_task(problem: Problem, variant: Variant, answer: dict) -> list[PlannedTask]:
    fit = fit_from_dict(answer["task"]) if "task" in answer else None
    lint_fit = fit_from_dict(answer["lint"]) if "lint" in answer else None
    reason = _plan_reason(answer, variant, fit)
    mode = _lint_mode(fit, lint_fit)
    planned = []
    for i, dtype in enumerate(variant.dtypes):
        task_id = problem.task_id if i == 0 else f"{problem.task_id}@{short_dtype(dtype)}"
        planned.append(PlannedTask(task_id, problem, dtype, fit, lint_fit, mode, reason,
                                   _notes(fit, lint_fit, mode, dtype, variant), problem_file=f"{problem.task_id}.py",
                                   specs=answer.get("specs")))
    return planned


def _plan_reason(answer: dict, variant: Variant, fit: SizeFit | None) -> str | None:
    if "cost_error" in answer:
        return f"cannot run the reference on the meta device: {answer['cost_error']}"
    if fit is None:
        return f"size profile failed: {answer.get('failure') or answer.get('error') or 'no answer'}"
    if "spec_error" in answer:
        return f"the compile gate cannot record this task by shape: {answer['spec_error']}"
    if variant.shrinks and fit.cost.estimated_ms > CPU_2CORE.budget_ms:
        return (f"too slow for the {CPU_2CORE.name} profile even at the smallest sizes its model allows: "
                f"estimated {fit.cost.estimated_ms:.4g} ms > {CPU_2CORE.budget_ms:g} ms")
    return None


def _lint_mode(fit: SizeFit | None, lint_fit: SizeFit | None) -> str:
    if fit is None or lint_fit is None or fit.source == lint_fit.source:
        return LINT_TASK_SIZES
    return LINT_REDUCED if lint_fit.cost.estimated_ms <= CPU_2CORE.budget_ms else LINT_META


def _notes(fit: SizeFit | None, lint_fit: SizeFit | None, mode: str, dtype: str, variant: Variant) -> str:
    if fit is None:
        return "original sizes"
    parts = [f"{fit.note}; estimated {fit.cost.estimated_ms:.3g} ms on this CPU"]
    if mode == LINT_REDUCED:
        parts.append(f"linted at {variant.lint_sizes} sizes ({lint_fit.note})")
    elif mode == LINT_META:
        parts.append(f"values not linted: {variant.lint_sizes} sizes still estimated at "
                     f"{lint_fit.cost.estimated_ms:.4g} ms > {CPU_2CORE.budget_ms:g} ms; shapes and cost checked on the meta device")
    align = alignment_note(fit.cost.input_shapes, fit.cost.output_shape, dtype, variant.alignment_bytes)
    return "; ".join(parts + ([align] if align else []))
