"""Reproducible benchmark builds: plan (deterministic) -> lint (measured) -> validate -> publish.

A build directory holds ``manifest.parquet``, ``measurements.parquet``, ``problems/<task_id>.py``
(the adapted files) and ``build.json``. Given a *judge* (:mod:`kernelbench_npu.judge`; the CLI passes
the verifier backend's), every ok task's verification path is checked on this machine after lint:
which gates run here goes to ``measurements.parquet`` (``gates_here``), and a task whose own path
fails is quarantined with the reason. It is written to a temporary sibling directory and renamed
into place, so a killed build never leaves a half-written build at ``out``.

Determinism. The build hash covers the problem sources (relative path + sha256 of every scanned
file), the variant (backend, dtypes, size profile), the levels and the builder version.
``problems/``, ``build.json`` and ``manifest.parquet`` are byte-identical for the same inputs on
the same software stack: sizes come from the meta-device cost model, and no lint verdict depends on
timing. Forward times measured during lint go to ``measurements.parquet``, outside every hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from kernelbench_npu.judge import Judge, JudgeRequest, TaskJudgement
from kernelbench_npu.lint import LintRequest, LintResult, WorkerPool, lint_all
from kernelbench_npu.manifest import manifest_table, measurements_table, write_manifest
from kernelbench_npu.plan import ADAPT_TIMEOUT_S, BUILDER_VERSION, BuildPlan, PlannedTask, plan_build
from kernelbench_npu.spec import LINT_OK, LINT_QUARANTINED
from kernelbench_npu.tolerance import tolerances
from kernelbench_npu.validate import validate_manifest
from kernelbench_npu.variants import LINT_TASK_SIZES, variant_for

Progress = Callable[[str], None]
LINT_MEMORY_BYTES = 3 << 30  # address space a lint worker may add (references run at cpu-2core sizes)


@dataclass(frozen=True)
class LevelCounts:
    level: int
    ok: int
    quarantined: int

    @property
    def total(self) -> int:
        return self.ok + self.quarantined


@dataclass(frozen=True)
class BuildSummary:
    out: Path
    build_hash: str
    backend: str
    counts: tuple[LevelCounts, ...]  # one per level present in the build
    load_errors: tuple[str, ...]
    seconds: float

    @property
    def ok(self) -> int:
        return sum(c.ok for c in self.counts)

    @property
    def quarantined(self) -> int:
        return sum(c.quarantined for c in self.counts)


def build_benchmark(backend: str, sources: Sequence[Path] = (), levels: Sequence[int] = (1, 2, 3),
                    out: Path = Path("runs/build-cpu"), progress: Progress | None = None, *,
                    include_bundled: bool = True, dtypes: Sequence[str] | None = None,
                    workers: int | None = None, task_timeout_s: float | None = None,
                    judge: Judge | None = None) -> BuildSummary:
    """Build the benchmark for ``backend`` into ``out`` (replacing a previous build there).

    ``task_timeout_s`` overrides the variant's per-task limit for adapting and for linting one task;
    ``judge`` checks every ok task's verification path on this machine (see the module docstring)."""
    started = time.perf_counter()
    say = progress or (lambda _msg: None)
    variant = variant_for(backend, tuple(dtypes) if dtypes else None)
    if task_timeout_s is not None:
        variant = replace(variant, lint_task_timeout_s=float(task_timeout_s))
    say(f"sizing the problems for {backend} on the meta device ...")
    with WorkerPool() as pool:  # the sizing's workers lint too: torch imported once per worker, not per phase
        plan = plan_build(variant, sources, levels, include_bundled, *pool_shape(workers),
                          timeout_s=task_timeout_s or ADAPT_TIMEOUT_S, progress=say, pool=pool)
        say(f"planned {len(plan.tasks)} tasks for {backend} ({len(plan.load_errors)} files skipped), hash {plan.build_hash}")
        for error in plan.load_errors:
            say(f"skipped {error}")
        results = lint_plan(plan, say, workers, pool)
    judgements = judge_plan(plan, results, judge, say) if judge is not None else None
    return publish_build(plan, results, Path(out), say, started, judgements)


def judge_plan(plan: BuildPlan, results: dict[str, LintResult], judge: Judge,
               progress: Progress | None = None) -> dict[str, TaskJudgement]:
    """Ask the judge about every task that is ok after lint (see :mod:`kernelbench_npu.judge`)."""
    say = progress or (lambda _msg: None)
    requests = []
    for task in plan.tasks:
        status, _reason, _notes = _verdict(task, results.get(task.task_id))
        if status == LINT_OK:
            lint_source = task.lint_fit.source if task.lint_fit else task.adapted_source
            requests.append(JudgeRequest(task.task_id, task.adapted_source, lint_source, task.dtype, task.specs))
    say(f"checking the verification path of {len(requests)} ok tasks on this machine ...")
    return judge(requests, say)


def lint_plan(plan: BuildPlan, progress: Progress | None = None, workers: int | None = None,
              pool: WorkerPool | None = None) -> dict[str, LintResult]:
    """Lint every task that survived planning, in a pool of worker processes (``pool``'s idle ones first)."""
    variant = plan.variant
    requests = [LintRequest(t.task_id, t.lint_fit.source, t.dtype, f"problems/{t.problem_file}")
                for t in plan.tasks if t.linted]
    workers, threads = pool_shape(workers)
    return lint_all(requests, variant.lint_task_timeout_s, workers=workers, threads=threads,
                    memory_bytes=LINT_MEMORY_BYTES, progress=progress, pool=pool)


def pool_shape(workers: int | None = None) -> tuple[int, int]:
    """(worker processes, torch threads per worker): by default 2 workers sharing the cores."""
    cores = os.cpu_count() or 1
    workers = workers or min(2, cores)
    return workers, max(1, cores // workers)


def publish_build(plan: BuildPlan, results: dict[str, LintResult], out: Path, progress: Progress | None = None,
                  started: float | None = None, judgements: dict[str, TaskJudgement] | None = None) -> BuildSummary:
    """Write the build to a temp dir, validate the manifest (GX), then rename it to ``out``."""
    say = progress or (lambda _msg: None)
    started = time.perf_counter() if started is None else started
    judgements = judgements or {}
    results = {**results, **{key: replace(results[key], status=LINT_QUARANTINED,
                                          reason=f"verification path here: {j.problem}")
                             for key, j in judgements.items() if j.problem and key in results}}
    rows = [_row(t, plan.variant.backend, results.get(t.task_id)) for t in plan.tasks]
    table = manifest_table(rows)
    validate_manifest(table)
    say("manifest validated (Great Expectations)")
    counts = _counts(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        _write_problems(plan.tasks, staging / "problems")
        write_manifest(table, staging / "manifest.parquet")
        write_manifest(measurements_table([_measurement(t, results.get(t.task_id), judgements.get(t.task_id))
                                           for t in plan.tasks]),
                       staging / "measurements.parquet")
        (staging / "build.json").write_text(json.dumps(_build_json(plan, counts), indent=2, sort_keys=True) + "\n")
        _replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary = BuildSummary(out, plan.build_hash, plan.variant.backend, counts, plan.load_errors,
                           time.perf_counter() - started)
    for c in counts:
        say(f"level {c.level}: {c.ok} ok, {c.quarantined} quarantined")
    return summary


def _row(task: PlannedTask, backend: str, result: LintResult | None) -> dict:
    status, reason, notes = _verdict(task, result)
    atol, rtol = (result.atol, result.rtol) if result is not None and task.plan_reason is None else tolerances(task.dtype, 1.0)
    fit, lint_fit = task.fit, task.lint_fit
    cost = fit.cost if fit else None
    return {
        "task_id": task.task_id, "level": task.problem.level, "category": task.problem.category,
        "name": task.problem.name, "source_sha256": task.problem.source_sha256, "variant": backend,
        "dtype": task.dtype, "original_shapes": json.dumps(fit.original if fit else {}),
        "adapted_shapes": json.dumps(fit.adapted if fit else {}), "dims": fit.dims_json() if fit else "[]",
        "balance": fit.balance if fit and fit.adapted != fit.original else None,
        "input_shapes": json.dumps(cost.input_shapes) if cost else None,
        "output_shape": json.dumps(cost.output_shape) if cost else None,
        "estimated_ms": cost.estimated_ms if cost else None, "atol": atol, "rtol": rtol,
        "lint_status": status, "lint_reason": reason, "lint_mode": task.lint_mode,
        "lint_shapes": json.dumps(lint_fit.adapted) if lint_fit else None, "lint_notes": notes,
        "problem_file": task.problem_file,
        "adapted_sha256": hashlib.sha256(task.adapted_source.encode()).hexdigest(), "notes": task.notes,
    }


def _verdict(task: PlannedTask, result: LintResult | None) -> tuple[str, str | None, str | None]:
    if task.plan_reason is not None:
        return LINT_QUARANTINED, task.plan_reason, None
    if not task.linted:
        return LINT_OK, None, None
    if result is None:
        return LINT_QUARANTINED, "not linted", None
    return result.status, result.reason, result.notes


def _measurement(task: PlannedTask, result: LintResult | None, judgement: TaskJudgement | None = None) -> dict:
    forward = result.reference_ms if result is not None else None
    return {"task_id": task.task_id, "lint_forward_ms": forward,
            "reference_ms": forward if task.lint_mode == LINT_TASK_SIZES else None,
            "gates_here": judgement.gates_json() if judgement is not None else None}


def _counts(rows: list[dict]) -> tuple[LevelCounts, ...]:
    levels = sorted({r["level"] for r in rows})
    return tuple(LevelCounts(lvl, sum(1 for r in rows if r["level"] == lvl and r["lint_status"] == LINT_OK),
                             sum(1 for r in rows if r["level"] == lvl and r["lint_status"] != LINT_OK))
                 for lvl in levels)


def _write_problems(tasks: Sequence[PlannedTask], root: Path) -> None:
    for task in tasks:
        path = root / task.problem_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(task.adapted_source, encoding="utf-8")


def _build_json(plan: BuildPlan, counts: tuple[LevelCounts, ...]) -> dict:
    import pyarrow
    import torch

    return {
        "build_hash": plan.build_hash,
        "backend": plan.variant.backend,
        "builder_version": BUILDER_VERSION,
        "variant": plan.variant.as_dict(),
        "levels": list(plan.levels),
        "sources": [s.label for s in plan.sources],
        "counts": {str(c.level): {"ok": c.ok, "quarantined": c.quarantined, "total": c.total} for c in counts},
        "total": {"ok": sum(c.ok for c in counts), "quarantined": sum(c.quarantined for c in counts)},
        "load_errors": list(plan.load_errors),
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "pyarrow": pyarrow.__version__, "lint_pool": list(pool_shape())},
        "measurements": "measurements.parquet",
    }


def _replace_dir(staging: Path, out: Path) -> None:
    """Rename ``staging`` to ``out``; an existing build at ``out`` is moved aside first, then removed."""
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, old)
    os.rename(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
