"""Planning a build: find and load the problems, adapt each to the variant, compute the build hash.

Everything here is deterministic (no timing): the same sources, variant, levels and builder version
give the same plan, the same adapted files and the same hash. Lint (which measures) comes after.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kernelbench_npu.loader import Problem, ProblemError, load_problem, problem_files
from kernelbench_npu.sizing import Cost, CostError, estimate_cost, fit_to_target, size_constants
from kernelbench_npu.variants import Variant, alignment_note, short_dtype

BUILDER_VERSION = "1.0"
BUNDLED_DIR = Path(__file__).resolve().parent / "problems"
MiB = 1 << 20


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
    adapted_source: str
    original_constants: dict
    adapted_constants: dict
    cost: Cost | None
    plan_reason: str | None  # set: quarantined before lint (no meta run, too big for the profile)
    notes: str
    problem_file: str  # relative to BUILD/problems/


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
               include_bundled: bool = True) -> BuildPlan:
    """Load, adapt and hash. Raises ProblemError when a source directory does not exist."""
    levels = tuple(sorted(set(int(x) for x in levels)))
    dirs = source_dirs(sources, include_bundled)
    problems, errors = [], []
    for src in dirs:
        for path, level in problem_files(src.path, levels):
            rel = path.relative_to(src.path).as_posix()
            try:
                problem = load_problem(path, level=level, id_prefix=src.id_prefix)
            except ProblemError as exc:
                errors.append(f"{src.label}/{rel}: {str(exc).removeprefix(str(path) + ': ')}")
                continue
            if problem.level in levels:
                problems.append(problem)
    _reject_duplicates(problems)
    tasks = tuple(t for p in problems for t in _plan_task(p, variant))
    return BuildPlan(variant, levels, dirs, tasks, tuple(errors), build_hash(variant, dirs, levels))


def build_hash(variant: Variant, dirs: Sequence[SourceDir], levels: tuple[int, ...]) -> str:
    """sha256 over the builder version, the variant, the levels and every scanned file (id prefix,
    path relative to its source, sha256 of its bytes); cheap: no file is executed."""
    digests = [(src.id_prefix, path.relative_to(src.path).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest())
               for src in dirs for path, _level in problem_files(src.path, levels)]
    payload = {"builder_version": BUILDER_VERSION, "variant": variant.as_dict(), "levels": list(levels),
               "sources": sorted(digests)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _reject_duplicates(problems: list[Problem]) -> None:
    seen: dict[str, Path] = {}
    for p in problems:
        if p.task_id in seen:
            raise ProblemError(f"{p.path}: task id {p.task_id!r} already used by {seen[p.task_id]}")
        seen[p.task_id] = p.path


def _plan_task(problem: Problem, variant: Variant) -> list[PlannedTask]:
    planned = []
    for i, dtype in enumerate(variant.dtypes):
        task_id = problem.task_id if i == 0 else f"{problem.task_id}@{short_dtype(dtype)}"
        planned.append(_adapt(problem, variant, dtype, task_id))
    return planned


def _adapt(problem: Problem, variant: Variant, dtype: str, task_id: str) -> PlannedTask:
    original = size_constants(problem.source)
    source, constants, cost, reason, note = problem.source, original, None, None, "original sizes"
    try:
        if variant.target_ms is not None:
            fitted = fit_to_target(problem.source, variant.target_ms, variant.keep_below_ms, dtype, str(problem.path))
            source, constants, cost, note = fitted.source, fitted.constants, fitted.cost, fitted.note
        else:
            cost = estimate_cost(problem.source, dtype, str(problem.path))
    except CostError as exc:
        reason = f"cannot run the reference on the meta device: {exc}"
    if cost is not None:
        note = f"{note}; estimated {cost.estimated_ms:.3g} ms on 2 CPU threads"
        if cost.footprint_bytes > variant.lint_memory_budget_bytes:
            reason = (f"too big for the lint profile: inputs+output+parameters {cost.footprint_bytes / MiB:.0f} MiB "
                      f"> {variant.lint_memory_budget_bytes / MiB:.0f} MiB ({variant.lint_profile})")
        align = alignment_note(cost.input_shapes, cost.output_shape, dtype, variant.alignment_bytes)
        note = f"{note}; {align}" if align else note
    return PlannedTask(task_id, problem, dtype, source, original, constants, cost, reason, note,
                       problem_file=f"{problem.task_id}.py")
