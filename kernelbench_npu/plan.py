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

from kernelbench_npu.lint import LintRequest, run_requests
from kernelbench_npu.loader import Problem, ProblemError, load_problem, problem_files
from kernelbench_npu.sizing import Cost, size_constants
from kernelbench_npu.variants import Variant, alignment_note, short_dtype

BUILDER_VERSION = "1.0"
BUNDLED_DIR = Path(__file__).resolve().parent / "problems"
MiB = 1 << 20
ADAPT_TIMEOUT_S = 60.0  # executing a file and fitting its sizes on the meta device takes well under a second


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
               include_bundled: bool = True, workers: int = 2, threads: int = 1,
               timeout_s: float = ADAPT_TIMEOUT_S) -> BuildPlan:
    """Load, adapt and hash. Raises ProblemError when a source directory does not exist.

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
    adapted = _adapt_all([p for _, p in problems], variant, workers, threads, timeout_s)
    tasks = []
    for src, problem in problems:
        if "load_error" in adapted.get(problem.task_id, {}):
            errors.append(_relative_error(src, problem.path, adapted[problem.task_id]["load_error"]))
            continue
        tasks += _plan_task(problem, variant, adapted)
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


def _adapt_all(problems: list[Problem], variant: Variant, workers: int, threads: int, timeout_s: float) -> dict[str, dict]:
    """Adapt every (problem, dtype) in the worker pool; answers keyed by task id (first dtype) and
    "<task id>@<dtype>" for the others."""
    requests = [LintRequest(_adapt_key(p.task_id, d), p.source, d, variant.lint_time_budget_ms, str(p.path), kind="adapt",
                            target_ms=variant.target_ms, keep_below_ms=variant.keep_below_ms)
                for p in problems for d in variant.dtypes]
    answers = run_requests(requests, timeout_s, workers=workers, threads=threads,
                           memory_bytes=4 * variant.lint_memory_budget_bytes + (1 << 30))
    for p in problems:  # a file that fails its meta-device checks is a load error for every dtype
        first = answers.get(_adapt_key(p.task_id, variant.dtypes[0]), {})
        if "load_error" in first:
            answers[p.task_id] = first
    return answers


def _adapt_key(task_id: str, dtype: str) -> str:
    return f"{task_id}#{dtype}"


def _reject_duplicates(problems: list[Problem]) -> None:
    seen: dict[str, Path] = {}
    for p in problems:
        if p.task_id in seen:
            raise ProblemError(f"{p.path}: task id {p.task_id!r} already used by {seen[p.task_id]}")
        seen[p.task_id] = p.path


def _plan_task(problem: Problem, variant: Variant, adapted: dict[str, dict]) -> list[PlannedTask]:
    planned = []
    for i, dtype in enumerate(variant.dtypes):
        task_id = problem.task_id if i == 0 else f"{problem.task_id}@{short_dtype(dtype)}"
        planned.append(_adapted_task(problem, variant, dtype, task_id, adapted[_adapt_key(problem.task_id, dtype)]))
    return planned


def _adapted_task(problem: Problem, variant: Variant, dtype: str, task_id: str, answer: dict) -> PlannedTask:
    original = size_constants(problem.source)
    source, constants, cost, reason, note = problem.source, original, None, None, "original sizes"
    if "cost" in answer:
        source, constants, note = answer["source"], answer["constants"], answer["note"]
        cost = _cost_from_dict(answer["cost"])
    elif "cost_error" in answer:
        reason = f"cannot run the reference on the meta device: {answer['cost_error']}"
    else:
        failure = answer.get("failure") or answer.get("error") or "no answer"
        reason = f"size profile failed: {failure}"
    if cost is not None:
        note = f"{note}; estimated {cost.estimated_ms:.3g} ms on 2 CPU threads"
        if cost.footprint_bytes > variant.lint_memory_budget_bytes:
            reason = (f"too big for the lint profile: inputs+output+parameters {cost.footprint_bytes / MiB:.0f} MiB "
                      f"> {variant.lint_memory_budget_bytes / MiB:.0f} MiB ({variant.lint_profile})")
        align = alignment_note(cost.input_shapes, cost.output_shape, dtype, variant.alignment_bytes)
        note = f"{note}; {align}" if align else note
    return PlannedTask(task_id, problem, dtype, source, original, constants, cost, reason, note,
                       problem_file=f"{problem.task_id}.py")


def _cost_from_dict(data: dict) -> Cost:
    shapes = tuple(tuple(s) if s is not None else None for s in data["input_shapes"])
    return Cost(**{**data, "input_shapes": shapes, "output_shape": tuple(data["output_shape"])})
